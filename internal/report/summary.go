// Package report turns stored samples into figures people read: per (target, path, workload,
// metric) summaries with confidence intervals and baseline fractions, as a table for the
// terminal and as JSON or YAML for machines.
package report

import (
	"math"
	"sort"
	"strings"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/stats"
	"github.com/cnibench/cnibench/internal/store"
	"github.com/cnibench/cnibench/internal/suite"
)

// Row is the summary of one metric of one cell of the matrix.
type Row struct {
	Target   string        `json:"target"`
	Path     string        `json:"path"`
	Workload string        `json:"workload"`
	Metric   string        `json:"metric"`
	Unit     string        `json:"unit"`
	Summary  stats.Summary `json:"summary"`
	// OfBaseline is the mean as a fraction of the host-network path's mean for the same target,
	// workload and metric; NaN where there is no baseline (or on the baseline itself).
	OfBaseline float64 `json:"ofBaseline"`
	Failed     int     `json:"failed"` // samples of this cell that failed
}

// resourceMetrics are the cost figures shown beside each workload's own metrics.
func resourceMetrics() []string {
	return []string{"cpu_s_per_gb", "cpu_s_per_1k_tx", "node_cpu_pct", "pod_cpu_s_per_gb", "pod_cpu_s_per_1k_tx", "host_cpu_seconds", "pod_cpu_seconds", "host_mem_used_mib"}
}

// Summarize computes every row of a run: warm-up samples are left out, failed ones counted.
func Summarize(samples []store.Sample) []Row {
	type key struct{ target, path, workload, metric string }
	values := map[key][]float64{}
	failed := map[key]int{}
	for _, s := range samples {
		if s.Warmup {
			continue
		}
		if s.Error != "" {
			failed[key{s.Target, s.Path, s.Workload, ""}]++
			continue
		}
		for name, v := range s.Metrics {
			values[key{s.Target, s.Path, s.Workload, name}] = append(values[key{s.Target, s.Path, s.Workload, name}], v)
		}
		for name, v := range s.Resources {
			values[key{s.Target, s.Path, s.Workload, name}] = append(values[key{s.Target, s.Path, s.Workload, name}], v)
		}
	}
	var rows []Row
	for k, xs := range values {
		unit := ""
		if spec, ok := MetricSpec(k.metric); ok {
			unit = spec.Unit
		}
		rows = append(rows, Row{Target: k.target, Path: k.path, Workload: k.workload, Metric: k.metric, Unit: unit,
			Summary: stats.Summarize(xs), OfBaseline: math.NaN(), Failed: failed[key{k.target, k.path, k.workload, ""}]})
	}
	means := map[key]float64{}
	for _, r := range rows {
		means[key{r.Target, r.Path, r.Workload, r.Metric}] = r.Summary.Mean
	}
	for i := range rows {
		r := &rows[i]
		if r.Path == suite.HostNetwork {
			continue
		}
		if base, ok := means[key{r.Target, suite.HostNetwork, r.Workload, r.Metric}]; ok && base != 0 {
			r.OfBaseline = r.Summary.Mean / base
		}
	}
	sortRows(rows)
	return rows
}

// MetricSpec describes engine metrics and the runner's resource figures alike; the cost
// figures are all lower-is-better.
func MetricSpec(name string) (engine.MetricSpec, bool) {
	if spec, ok := engine.Metric(name); ok {
		return spec, true
	}
	specs := map[string]engine.MetricSpec{
		"cpu_s_per_gb":        {Name: "cpu_s_per_gb", Unit: "CPU-s/GB", Description: "host CPU time per gigabyte received"},
		"pod_cpu_s_per_gb":    {Name: "pod_cpu_s_per_gb", Unit: "CPU-s/GB", Description: "client+server container CPU per gigabyte"},
		"cpu_s_per_1k_tx":     {Name: "cpu_s_per_1k_tx", Unit: "CPU-s/1k", Description: "host CPU time per thousand transactions"},
		"pod_cpu_s_per_1k_tx": {Name: "pod_cpu_s_per_1k_tx", Unit: "CPU-s/1k", Description: "client+server container CPU per thousand transactions"},
		"node_cpu_pct":        {Name: "node_cpu_pct", Unit: "%", Description: "busy CPU of the hosts involved"},
		"host_cpu_seconds":    {Name: "host_cpu_seconds", Unit: "CPU-s", Description: "host CPU time during the sample"},
		"pod_cpu_seconds":     {Name: "pod_cpu_seconds", Unit: "CPU-s", Description: "client+server container CPU time"},
		"host_mem_used_mib":   {Name: "host_mem_used_mib", Unit: "MiB", Description: "host memory in use"},
	}
	s, ok := specs[name]
	return s, ok
}

// sortRows orders rows by target, workload, path (suite order), then metric display order.
func sortRows(rows []Row) {
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.Target != b.Target {
			return a.Target < b.Target
		}
		if a.Workload != b.Workload {
			return a.Workload < b.Workload
		}
		if a.Path != b.Path {
			return pathRank(a.Path) < pathRank(b.Path)
		}
		return metricRank(a.Workload, a.Metric) < metricRank(b.Workload, b.Metric)
	})
}

// metricRank puts a workload's own metrics first, in the engine's order, then the costs.
func metricRank(workload, metric string) int {
	kind := strings.SplitN(workload, "/", 2)[0]
	order := append(engine.MetricsFor(kind), resourceMetrics()...)
	for i, m := range order {
		if m == metric {
			return i
		}
	}
	return len(order)
}

// Headline reports whether a row belongs in the terminal table (the rest are in JSON).
func Headline(r Row) bool {
	kind := strings.SplitN(r.Workload, "/", 2)[0]
	for _, m := range engine.MetricsFor(kind) {
		if m == r.Metric {
			return !strings.HasSuffix(m, "_cpu_pct")
		}
	}
	return r.Metric == "cpu_s_per_gb" || r.Metric == "cpu_s_per_1k_tx" || r.Metric == "node_cpu_pct"
}
