// Package analysis turns stored samples into the figures a run reports: per (target, path,
// workload, metric) summaries with confidence intervals and baseline fractions, the rankings
// of targets and the verdict with its comparisons, and the order they are shown in. It
// renders nothing: internal/report, internal/compare and the exports format what it finds.
package analysis

import (
	"cmp"
	"math"
	"slices"

	"github.com/cnibench/cnibench/internal/catalog"
	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/stats"
	"github.com/cnibench/cnibench/internal/suite"
)

// Row is the summary of one metric of one cell of the matrix.
type Row struct {
	Target   string        `json:"target"`
	Path     string        `json:"path"`
	Workload string        `json:"workload"`
	Pairs    int           `json:"pairs"`
	Metric   string        `json:"metric"`
	Unit     string        `json:"unit"`
	Summary  stats.Summary `json:"summary"`
	// OfBaseline is the mean as a fraction of the host-network path's mean for the same target,
	// workload, pairs and metric; NaN where there is no baseline (or on the baseline itself).
	OfBaseline float64 `json:"ofBaseline"`
	Failed     int     `json:"failed"`  // samples of this cell that failed
	Flagged    int     `json:"flagged"` // samples of this cell that carry a flag (e.g. start skew)
}

// Cell is the row's place in the matrix.
func (r Row) Cell() record.Cell {
	return record.Cell{Target: r.Target, Path: r.Path, Workload: r.Workload, Pairs: max(r.Pairs, 1)}
}

// Label is the workload with its concurrency, as tables and sections show it.
func (r Row) Label() string { return r.Cell().WorkloadLabel() }

// Summarize computes every row of a run: warm-up samples are left out, failed ones counted.
func Summarize(samples []record.Sample) []Row {
	type key struct {
		cell   record.Cell
		metric string
	}
	values := map[key][]float64{}
	failed, flagged := map[record.Cell]int{}, map[record.Cell]int{}
	for _, s := range samples {
		if s.Warmup {
			continue
		}
		c := s.Cell()
		if s.Error != "" {
			failed[c]++
			continue
		}
		if len(s.Flags) > 0 {
			flagged[c]++
		}
		for name, v := range s.Metrics {
			values[key{c, name}] = append(values[key{c, name}], v)
		}
		for name, v := range s.Resources {
			values[key{c, name}] = append(values[key{c, name}], v)
		}
	}
	var rows []Row
	for k, xs := range values {
		unit := ""
		if spec, ok := catalog.Lookup(k.metric); ok {
			unit = spec.Unit
		}
		c := k.cell
		rows = append(rows, Row{Target: c.Target, Path: c.Path, Workload: c.Workload, Pairs: c.Pairs, Metric: k.metric, Unit: unit,
			Summary: SummarizeMetric(k.metric, xs), OfBaseline: math.NaN(), Failed: failed[c], Flagged: flagged[c]})
	}
	means := map[key]float64{}
	for _, r := range rows {
		means[key{r.Cell(), r.Metric}] = r.Summary.Mean
	}
	for i := range rows {
		r := &rows[i]
		if r.Path == suite.HostNetwork {
			continue
		}
		base := r.Cell()
		base.Path = suite.HostNetwork
		if m, ok := means[key{base, r.Metric}]; ok && m != 0 {
			r.OfBaseline = r.Summary.Mean / m
		}
	}
	sortRows(rows)
	return rows
}

// SummarizeMetric summarises a metric's values with an interval inside the metric's bounds.
func SummarizeMetric(metric string, xs []float64) stats.Summary {
	lo, hi := catalog.Bounds(metric)
	return stats.SummarizeIn(xs, stats.Domain{Lo: lo, Hi: hi})
}

// sortRows orders rows by target, workload, path (suite order), then metric display order.
func sortRows(rows []Row) {
	slices.SortFunc(rows, func(a, b Row) int {
		return cmp.Or(cmp.Compare(a.Target, b.Target),
			Order{a.Workload, a.Pairs, a.Path, a.Metric}.Compare(Order{b.Workload, b.Pairs, b.Path, b.Metric}))
	})
}

// MetricRank puts a workload's own metrics first, in the engine's order, then the pair
// figures, the costs and the setup latencies: the display order of every table.
func MetricRank(workload, name string) int {
	kind := WorkloadKind(workload)
	rate := engine.RateMetric(kind)
	// A rate search's found rate goes before the figures of its best trial.
	order := append([]string{catalog.RFC2544}, engine.MetricsFor(kind)...)
	order = append(order, catalog.Concurrency()...)
	order = append(order, rate+catalog.PairMin, rate+catalog.PairMedian, rate+catalog.PairMax)
	order = append(order, catalog.Costs()...)
	order = append(order, catalog.Setup()...)
	for i, m := range order {
		if m == name {
			return i
		}
	}
	return len(order)
}

// Headline reports whether a row belongs in the terminal table (the rest are in JSON).
func Headline(r Row) bool {
	// Fairness says nothing about one pair.
	if r.Metric == catalog.Fairness && r.Pairs <= 1 {
		return false
	}
	return catalog.Headline(r.Metric)
}
