package report

import "testing"

func TestMetricSpecDirections(t *testing.T) {
	for name, higher := range map[string]bool{"throughput_gbps": true, "transactions_per_s": true,
		"latency_p99_us": false, "cpu_s_per_gb": false, "cpu_s_per_1k_tx": false, "node_cpu_pct": false} {
		spec, ok := MetricSpec(name)
		if !ok || spec.HigherIsBetter != higher || spec.Unit == "" {
			t.Errorf("MetricSpec(%s) = %+v, %v", name, spec, ok)
		}
	}
	if _, ok := MetricSpec("custom_thing"); ok {
		t.Error("MetricSpec(custom_thing) is known")
	}
}
