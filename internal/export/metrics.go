package export

import "github.com/cnibench/cnibench/internal/engine"

// LookupMetric returns the metadata of a stored value's name: an engine metric, or one of the
// runner's resource figures. The resource figures are costs (CPU time, CPU per unit of work,
// busy CPU, memory), so their direction is lower-is-better.
//
// It mirrors report's unexported metricSpec, which export cannot call; the two tables must
// stay in step until report exports its lookup.
func LookupMetric(name string) (engine.MetricSpec, bool) {
	if spec, ok := engine.Metric(name); ok {
		return spec, true
	}
	for _, s := range resourceSpecs() {
		if s.Name == name {
			return s, true
		}
	}
	return engine.MetricSpec{}, false
}

// resourceSpecs describes the resource figures the runner stores with each sample.
func resourceSpecs() []engine.MetricSpec {
	return []engine.MetricSpec{
		{Name: "cpu_s_per_gb", Unit: "CPU-s/GB", Description: "Host CPU time per gigabyte received."},
		{Name: "pod_cpu_s_per_gb", Unit: "CPU-s/GB", Description: "Client and server container CPU time per gigabyte received."},
		{Name: "cpu_s_per_1k_tx", Unit: "CPU-s/1k", Description: "Host CPU time per thousand transactions."},
		{Name: "pod_cpu_s_per_1k_tx", Unit: "CPU-s/1k", Description: "Client and server container CPU time per thousand transactions."},
		{Name: "node_cpu_pct", Unit: "%", Description: "Busy CPU of the hosts involved, averaged over them."},
		{Name: "host_cpu_seconds", Unit: "CPU-s", Description: "Host CPU time during the sample."},
		{Name: "pod_cpu_seconds", Unit: "CPU-s", Description: "Client and server container CPU time during the sample."},
		{Name: "host_mem_used_mib", Unit: "MiB", Description: "Host memory in use, averaged over the hosts involved."},
	}
}
