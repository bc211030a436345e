package report

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/cnibench/cnibench/internal/catalog"
	"github.com/cnibench/cnibench/internal/stats"
	"github.com/cnibench/cnibench/internal/store"
	"github.com/cnibench/cnibench/internal/suite"
)

// Ranked is one target's place in a ranking.
type Ranked struct {
	Target      string        `json:"target"`
	Summary     stats.Summary `json:"-"`
	Mean        float64       `json:"mean"`
	RatioToBest float64       `json:"ratioToBest"`
	// Verdict compares the target with the best one: "best", "worse" (significantly),
	// "not significant" (the data cannot tell them apart) or "untested" (too few samples).
	Verdict string  `json:"verdict"`
	PValue  float64 `json:"pValue,omitempty"`
}

// RankGroup ranks the targets of a run on one metric of one path and workload.
type RankGroup struct {
	Path           string   `json:"path"`
	Workload       string   `json:"workload"`
	Pairs          int      `json:"pairs"`
	Metric         string   `json:"metric"`
	Unit           string   `json:"unit"`
	HigherIsBetter bool     `json:"higherIsBetter"`
	Entries        []Ranked `json:"entries"`
}

// Rank orders the targets of a run, best first, on every headline metric with a known
// direction, and tests each against the best (Mann-Whitney U with a bootstrap ratio interval,
// stats.Compare). It returns nothing for a run with one target.
func Rank(samples []store.Sample) []RankGroup {
	type cell struct {
		path, workload string
		pairs          int
		metric         string
	}
	values := map[cell]map[string][]float64{}
	for _, s := range samples {
		if s.Warmup || s.Error != "" {
			continue
		}
		add := func(name string, v float64) {
			k := cell{s.Path, s.Workload, s.Cell().Pairs, name}
			if values[k] == nil {
				values[k] = map[string][]float64{}
			}
			values[k][s.Target] = append(values[k][s.Target], v)
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
	sort.Slice(groups, func(i, j int) bool {
		a, b := groups[i], groups[j]
		if a.Workload != b.Workload {
			return a.Workload < b.Workload
		}
		if a.Pairs != b.Pairs {
			return a.Pairs < b.Pairs
		}
		if a.Path != b.Path {
			return pathRank(a.Path) < pathRank(b.Path)
		}
		return MetricRank(a.Workload, a.Metric) < MetricRank(b.Workload, b.Metric)
	})
	return groups
}

// WriteRanking prints the rankings, one line per path, workload and metric.
func WriteRanking(w io.Writer, groups []RankGroup) {
	if len(groups) == 0 {
		return
	}
	fmt.Fprintln(w, "\nranking (best first; x = mean relative to the best; 'n.s.' = not significantly different from the best, p from Mann-Whitney U):")
	for _, g := range groups {
		dir := direction(g.HigherIsBetter)
		var parts []string
		for _, e := range g.Entries {
			parts = append(parts, entryText(e))
		}
		label := store.Cell{Workload: g.Workload, Pairs: g.Pairs}.WorkloadLabel()
		fmt.Fprintf(w, "  %-22s %-14s %s [%s, %s]: %s\n", label, g.Path, g.Metric, g.Unit, dir, strings.Join(parts, " | "))
	}
}

// pathRank orders paths as the suite lists them, the baseline first.
func pathRank(path string) int {
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
func rankEntries(metric string, byName map[string][]float64, higher bool, against, refVerdict string) []Ranked {
	var entries []Ranked
	for name, xs := range byName {
		s := SummarizeMetric(metric, xs)
		entries = append(entries, Ranked{Target: name, Summary: s, Mean: s.Mean})
	}
	sort.Slice(entries, func(i, j int) bool {
		a, b := entries[i].Mean, entries[j].Mean
		if a == b {
			return entries[i].Target < entries[j].Target
		}
		return (a > b) == higher
	})
	if against == "" {
		against = entries[0].Target
	}
	ref := byName[against]
	refMean := stats.Summarize(ref).Mean
	for i := range entries {
		e := &entries[i]
		if e.Target == against {
			e.Verdict, e.RatioToBest = refVerdict, 1
			continue
		}
		e.RatioToBest = math.NaN()
		if refMean != 0 {
			e.RatioToBest = e.Mean / refMean
		}
		e.Verdict = untested
		cmp, err := stats.Compare(ref, byName[e.Target], higher, stats.CompareOptions{Seed: 1})
		if err == nil {
			e.PValue, e.Verdict = cmp.PValue, "not significant"
			switch cmp.Verdict {
			case stats.VerdictWorse:
				e.Verdict = "worse"
			case stats.VerdictBetter:
				e.Verdict = "better"
			}
		}
	}
	return entries
}

// entryText is one entry of a ranking or verdict line: mean, interval and how it compares.
func entryText(e Ranked) string {
	part := fmt.Sprintf("%s %s %s", e.Target, num(e.Mean), ciOf(e.Summary))
	switch e.Verdict {
	case "best", "reference":
	case "not significant":
		part += fmt.Sprintf(" x%.2f n.s. (p=%.2g)", e.RatioToBest, e.PValue)
	case untested:
		part += fmt.Sprintf(" x%.2f untested (too few samples)", e.RatioToBest)
	default:
		part += fmt.Sprintf(" x%.2f %s (p=%.2g)", e.RatioToBest, e.Verdict, e.PValue)
	}
	if e.Summary.Bimodal {
		part += " bimodal"
	}
	return part
}

// direction says which way a metric is better.
func direction(higher bool) string {
	if higher {
		return "higher is better"
	}
	return "lower is better"
}
