package analysis

import (
	"slices"
	"sort"

	"github.com/cnibench/cnibench/internal/catalog"
	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/stats"
)

// CellRounds is one (path, workload, pairs) cell's verdict metric sample by sample, for each
// target that measured it: how the figures moved from round to round and how they spread,
// which a mean and its interval hide.
type CellRounds struct {
	Path           string `json:"path"`
	Workload       string `json:"workload"`
	Pairs          int    `json:"pairs"`
	Metric         string `json:"metric"`
	Unit           string `json:"unit"`
	HigherIsBetter bool   `json:"higherIsBetter"`
	// Series are the targets' samples, by target name.
	Series []TargetRounds `json:"series"`
}

// TargetRounds is one target's samples of a cell.
type TargetRounds struct {
	Target string `json:"target"`
	// Points are the measured samples in round order (a round's samples in the order they
	// were taken); Outlier marks the ones outside Summary's Tukey fences.
	Points []RoundValue `json:"points"`
	// Failed are the samples that failed, in round order: they have no value.
	Failed []RoundFailure `json:"failed,omitempty"`
	// Summary summarises the Points' values as the cell's row does (SummarizeMetric): the
	// mean and 95 % interval the report's tables print.
	Summary stats.Summary `json:"-"`
}

// RoundValue is one measured sample.
type RoundValue struct {
	Round   int     `json:"round"`
	Value   float64 `json:"value"`
	Outlier bool    `json:"outlier,omitempty"`
}

// RoundFailure is one failed sample: its round and the error it stored.
type RoundFailure struct {
	Round int    `json:"round"`
	Error string `json:"error"`
}

// Rounds returns every measured cell's verdict metric (VerdictMetric, as the verdict ranks
// it) sample by sample, per target, in the order figures are listed (Order). Warm-up samples
// are left out, as from every result; the setup figures, taken once per target, have no rounds
// and are left out too.
func Rounds(samples []record.Sample) []CellRounds {
	type cellKey struct {
		path, workload string
		pairs          int
	}
	byCell := map[cellKey]map[string][]record.Sample{}
	for _, s := range samples {
		if s.Warmup || s.Path == record.SetupPath {
			continue
		}
		k := cellKey{s.Path, s.Workload, s.Cell().Pairs}
		if byCell[k] == nil {
			byCell[k] = map[string][]record.Sample{}
		}
		byCell[k][s.Target] = append(byCell[k][s.Target], s)
	}
	var out []CellRounds
	for k, byTarget := range byCell {
		measured := map[string]bool{}
		for _, ss := range byTarget {
			for _, s := range ss {
				for name := range s.Metrics {
					measured[name] = true
				}
			}
		}
		metric := VerdictMetric(k.workload, measured)
		if metric == "" {
			continue
		}
		spec, _ := catalog.Lookup(metric)
		c := CellRounds{Path: k.path, Workload: k.workload, Pairs: k.pairs, Metric: metric, Unit: spec.Unit, HigherIsBetter: spec.HigherIsBetter}
		for target, ss := range byTarget {
			c.Series = append(c.Series, targetRounds(target, metric, ss))
		}
		sort.Slice(c.Series, func(i, j int) bool { return c.Series[i].Target < c.Series[j].Target })
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b CellRounds) int {
		return Order{a.Workload, a.Pairs, a.Path, a.Metric}.Compare(Order{b.Workload, b.Pairs, b.Path, b.Metric})
	})
	return out
}

// targetRounds orders one target's samples of a cell by round and summarises its values of
// metric; a sample that did not fail but lacks the metric is left out, as from its row.
func targetRounds(target, metric string, ss []record.Sample) TargetRounds {
	ss = slices.Clone(ss)
	slices.SortStableFunc(ss, func(a, b record.Sample) int {
		if a.Round != b.Round {
			return a.Round - b.Round
		}
		return a.Seq - b.Seq
	})
	t := TargetRounds{Target: target}
	var values []float64
	for _, s := range ss {
		if s.Error != "" {
			t.Failed = append(t.Failed, RoundFailure{Round: s.Round, Error: s.Error})
			continue
		}
		if v, ok := s.Metrics[metric]; ok {
			t.Points = append(t.Points, RoundValue{Round: s.Round, Value: v})
			values = append(values, v)
		}
	}
	t.Summary = SummarizeMetric(metric, values)
	for _, i := range t.Summary.Outliers {
		t.Points[i].Outlier = true
	}
	return t
}
