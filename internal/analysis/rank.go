package analysis

import (
	"math"
	"slices"
	"sort"

	"github.com/cnibench/cnibench/internal/catalog"
	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/stats"
	"github.com/cnibench/cnibench/internal/suite"
)

// Ranked is one target's place in a ranking.
type Ranked struct {
	Target      string        `json:"target"`
	Summary     stats.Summary `json:"-"`
	Mean        float64       `json:"mean"`
	RatioToBest float64       `json:"ratioToBest"`
	// Verdict compares the target with the best one: "best", "worse" (significantly),
	// "not significant" (the data cannot tell them apart), "untestable" (at these sample
	// sizes no data could have reached significance) or "untested" (too few samples).
	Verdict string `json:"verdict"`
	// PValue is the comparison's p-value (the paired t on the per-round differences where
	// Paired, else Mann-Whitney U; loss: Welch's t), Holm-adjusted over the ranking's
	// comparisons.
	PValue float64 `json:"pValue,omitempty"`
	// Paired says the comparison with the reference was paired by round (stats.CompareBlocked);
	// Dropped counts the rounds it left out for not holding one sample of each side.
	Paired  bool `json:"paired,omitempty"`
	Dropped int  `json:"droppedRounds,omitempty"`
	// MDE is the smallest difference of the means the comparison would have called four times
	// in five at its noise and samples, at the level its Holm-adjusted test needs (0.15: 15 %;
	// in the metric's unit where Points), NaN where unknown, +Inf where no data could reach
	// that level. The level is alpha/m over the m comparisons of the family, the first step
	// of Holm's: a p below it is called whatever the others, so the figure holds for the
	// comparison's own step too, conservatively.
	MDE float64 `json:"-"`
	// NA and NB are the samples of the reference and of this target behind the comparison:
	// where Paired, the complete rounds.
	NA int `json:"nReference,omitempty"`
	NB int `json:"n,omitempty"`
	// Est is the comparison's t estimate (stats.Comparison.Est), which the equivalence test
	// (Equivalent) reads.
	Est stats.Estimate `json:"-"`
	// RatioLow and RatioHigh bound the 95 % interval of this entry's mean over the
	// reference's (stats.Comparison), unadjusted; NaN where no comparison was made.
	RatioLow  float64 `json:"-"`
	RatioHigh float64 `json:"-"`
	// Points says the metric is compared on the difference scale (catalog.Points, UDP loss):
	// Diff is this entry's mean less the reference's, in the metric's unit, DiffLow and
	// DiffHigh bound its 95 % interval (NaN where no comparison was made), and MDE is in
	// that unit.
	Points   bool    `json:"points,omitempty"`
	Diff     float64 `json:"-"`
	DiffLow  float64 `json:"-"`
	DiffHigh float64 `json:"-"`
}

// Verdicts of a ranked entry besides "best", "better", "worse" and "reference".
const (
	// NotSignificant: the data cannot tell the entry from the reference.
	NotSignificant = "not significant"
	// Untestable: no data could make the comparison significant at its samples.
	Untestable = "untestable"
)

// RankGroup ranks the targets of a run on one metric of one path and workload.
type RankGroup struct {
	Path           string   `json:"path"`
	Workload       string   `json:"workload"`
	Pairs          int      `json:"pairs"`
	Metric         string   `json:"metric"`
	Unit           string   `json:"unit"`
	HigherIsBetter bool     `json:"higherIsBetter"`
	Entries        []Ranked `json:"entries"`
	// Margin is as VerdictLine's: the run's equivalence margin, 0 where it has none.
	Margin float64 `json:"margin,omitempty"`
}

// Rank orders the targets of a run, best first, on every headline metric with a known
// direction, and tests each against the best, paired by round where every round measured
// both (stats.CompareBlocked). It returns nothing for a run with one target.
func Rank(samples []record.Sample) []RankGroup {
	type cell struct {
		path, workload string
		pairs          int
		metric         string
	}
	values := map[cell]map[string][]stats.Obs{}
	for _, s := range samples {
		if s.Warmup || s.Error != "" {
			continue
		}
		add := func(name string, v float64) {
			k := cell{s.Path, s.Workload, s.Cell().Pairs, name}
			if values[k] == nil {
				values[k] = map[string][]stats.Obs{}
			}
			values[k][s.Target] = append(values[k][s.Target], obs(s, v))
		}
		for name, v := range s.Metrics {
			add(name, v)
		}
		for name, v := range s.Resources {
			add(name, v)
		}
	}
	var groups []RankGroup
	for k, byTarget := range values {
		spec, known := catalog.Lookup(k.metric)
		if !known || len(byTarget) < 2 || !Headline(Row{Workload: k.workload, Pairs: k.pairs, Metric: k.metric}) {
			continue
		}
		g := RankGroup{Path: k.path, Workload: k.workload, Pairs: k.pairs, Metric: k.metric, Unit: spec.Unit, HigherIsBetter: spec.HigherIsBetter}
		g.Entries = rankEntries(k.metric, byTarget, spec.HigherIsBetter, "", "best")
		groups = append(groups, g)
	}
	slices.SortFunc(groups, func(a, b RankGroup) int {
		return Order{a.Workload, a.Pairs, a.Path, a.Metric}.Compare(Order{b.Workload, b.Pairs, b.Path, b.Metric})
	})
	return groups
}

// PathRank orders paths as the suite lists them, the baseline first.
func PathRank(path string) int {
	for i, p := range suite.AllPaths() {
		if p == path {
			return i
		}
	}
	return len(suite.AllPaths())
}

// rankEntries summarises each name's values of a metric, orders them best first and compares
// each with the reference (against, or the best when against is empty), whose verdict is
// refVerdict.
func rankEntries(metric string, byName map[string][]stats.Obs, higher bool, against, refVerdict string) []Ranked {
	var entries []Ranked
	for name, xs := range byName {
		s := SummarizeMetric(metric, stats.Values(xs))
		entries = append(entries, Ranked{Target: name, Summary: s, Mean: s.Mean})
	}
	sort.Slice(entries, func(i, j int) bool {
		a, b := entries[i].Mean, entries[j].Mean
		if a == b {
			return entries[i].Target < entries[j].Target
		}
		return (a > b) == higher
	})
	postHoc := against == ""
	if postHoc {
		against = entries[0].Target
	}
	compareWithReference(metric, entries, byName, higher, against, refVerdict, postHoc)
	return entries
}

// compareObs compares b with a on the metric's scale: the difference of the means for a
// figure catalog.Points names, else the ratio.
func compareObs(metric string, a, b []stats.Obs, higher bool) (stats.Comparison, error) {
	if catalog.Points(metric) {
		return stats.ComparePoints(a, b, higher, stats.PairAuto, stats.CompareOptions{})
	}
	return stats.CompareBlocked(a, b, higher, stats.PairAuto, stats.CompareOptions{Seed: 1})
}

// compareWithReference compares every entry with the reference, adjusting the p-values with
// Holm's method over the family the question implies. Against a reference chosen beforehand
// (a baseline) that is its k-1 comparisons. Against the best, picked after the fact
// (postHoc), it is every pair of targets: the best is the extreme of the k, so its k-1
// comparisons are not a family of their own, and identical targets got a "worse" with
// probability 0.1 among three and 0.3 among six unadjusted, 0.066 among six with Holm over
// the k-1 (TestRankingFalseVerdicts). An entry is untestable when even its most extreme data
// could not have reached alpha after adjustment, the rest of the family as it is
// (stats.AdjustedFloor; 3 against 3: p >= 0.1), which says more than "not significant".
func compareWithReference(metric string, entries []Ranked, byName map[string][]stats.Obs, higher bool, against, refVerdict string, postHoc bool) {
	ref := byName[against]
	refMean := stats.Summarize(stats.Values(ref)).Mean
	cmps := make([]stats.Comparison, len(entries))
	raw := make([]float64, len(entries))
	for i := range entries {
		raw[i] = math.NaN()
		if cmp, ok := compareEntry(metric, &entries[i], ref, refMean, byName, higher, against, refVerdict); ok {
			cmps[i], raw[i] = cmp, cmp.PValue
		}
	}
	family := raw
	if postHoc {
		family = append(slices.Clone(raw), otherPairs(metric, entries, byName, against, higher)...)
	}
	minP := make([]float64, len(family))
	made := 0
	for i, p := range family {
		if !math.IsNaN(p) {
			made++
		}
		if i < len(entries) {
			minP[i] = cmps[i].MinP
		}
	}
	adjusted, errA := stats.AdjustPValues(family, stats.AdjustHolm)
	floor, errF := stats.AdjustedFloor(family, minP, stats.AdjustHolm)
	if errA != nil || errF != nil {
		return
	}
	for i := range entries {
		if !math.IsNaN(raw[i]) {
			judge(&entries[i], cmps[i], adjusted[i], floor[i], made)
		}
	}
}

// compareEntry fills what an entry shows besides its verdict and compares it with the
// reference; ok is false for the reference itself and where no comparison could be made.
func compareEntry(metric string, e *Ranked, ref []stats.Obs, refMean float64, byName map[string][]stats.Obs, higher bool, against, refVerdict string) (stats.Comparison, bool) {
	nan := math.NaN()
	e.RatioLow, e.RatioHigh, e.DiffLow, e.DiffHigh, e.Est = nan, nan, nan, nan, stats.Estimate{Center: nan, SE: nan, DF: nan}
	e.Points, e.Diff = catalog.Points(metric), e.Mean-refMean
	if e.Target == against {
		e.Verdict, e.RatioToBest, e.MDE = refVerdict, 1, nan
		return stats.Comparison{}, false
	}
	e.RatioToBest = nan
	if refMean != 0 {
		e.RatioToBest = e.Mean / refMean
	}
	e.Verdict, e.MDE = Untested, nan
	cmp, err := compareObs(metric, ref, byName[e.Target], higher)
	if err != nil {
		return stats.Comparison{}, false
	}
	e.Paired, e.Dropped, e.RatioLow, e.RatioHigh, e.Est = cmp.Paired, cmp.DroppedBlocks, cmp.RatioLow, cmp.RatioHigh, cmp.Est
	e.NA, e.NB = cmp.NA, cmp.NB
	if cmp.Points {
		e.Diff, e.DiffLow, e.DiffHigh = cmp.Diff, cmp.DiffLow, cmp.DiffHigh
	}
	return cmp, true
}

// judge gives an entry its verdict from its comparison c, its Holm-adjusted p-value and the
// floor of that p-value, in a family of made comparisons, and its detectable difference at the
// level the adjusted test needs.
func judge(e *Ranked, c stats.Comparison, adjusted, floor float64, made int) {
	e.PValue, e.MDE = adjusted, c.DetectableAt(stats.DefaultAlpha/float64(max(made, 1)))
	switch {
	case floor >= stats.DefaultAlpha:
		e.Verdict = Untestable
	case adjusted >= stats.DefaultAlpha || c.Verdict == stats.VerdictNone:
		e.Verdict = NotSignificant
	case c.Verdict == stats.VerdictWorse:
		e.Verdict = "worse"
	case c.Verdict == stats.VerdictBetter:
		e.Verdict = "better"
	default:
		e.Verdict = NotSignificant
	}
}

// otherPairs returns the p-values of the comparisons between entries that do not involve the
// reference (NaN where one could not be made), to complete the family of all pairs.
func otherPairs(metric string, entries []Ranked, byName map[string][]stats.Obs, against string, higher bool) []float64 {
	var out []float64
	for i := range entries {
		for j := i + 1; j < len(entries); j++ {
			a, b := entries[i].Target, entries[j].Target
			if a == against || b == against {
				continue
			}
			p := math.NaN()
			if c, err := compareObs(metric, byName[a], byName[b], higher); err == nil {
				p = c.PValue
			}
			out = append(out, p)
		}
	}
	return out
}

// obs is a sample's value with its block (record.Sample.Block), by which comparisons pair.
func obs(s record.Sample, v float64) stats.Obs { return stats.Obs{Block: s.Block(), Value: v} }
