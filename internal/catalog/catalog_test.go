package catalog_test

import (
	"testing"

	"github.com/cnibench/cnibench/internal/catalog"
	"github.com/cnibench/cnibench/internal/engine"
)

// Every figure any part of cnibench stores is in the catalogue, with a unit and a description.
func TestEveryStoredMetricIsCatalogued(t *testing.T) {
	var names []string
	for _, kind := range []string{engine.TCPStream, engine.UDPStream, engine.TCPRR, engine.TCPCRR} {
		names = append(names, engine.MetricsFor(kind)...)
		names = append(names, engine.RateMetric(kind)+catalog.PairMin, engine.RateMetric(kind)+catalog.PairMax)
	}
	names = append(names, engine.MetricErrors)
	names = append(names, catalog.Costs()...)
	names = append(names, catalog.Concurrency()...)
	names = append(names, catalog.Setup()...)
	for _, name := range names {
		s, ok := catalog.Lookup(name)
		if !ok || s.Name != name || s.Unit == "" || s.Description == "" {
			t.Errorf("Lookup(%q) = %+v, %v", name, s, ok)
		}
	}
	if _, ok := catalog.Lookup("bogus"); ok {
		t.Error("bogus is catalogued")
	}
	if _, ok := catalog.Lookup("bogus" + catalog.PairMin); ok {
		t.Error("a pair statistic of an unknown metric is catalogued")
	}
}

func TestDirectionsAndAggregations(t *testing.T) {
	for name, higher := range map[string]bool{"throughput_gbps": true, "packets_per_s": true, "transactions_per_s": true,
		"connections_per_s": true, "fairness_jain": true, "throughput_gbps_pair_min": true,
		"retransmits": false, "loss_pct": false, "jitter_ms": false, "latency_p99_us": false, "sender_cpu_pct": false,
		"cpu_s_per_gb": false, "cpu_s_per_1k_tx": false, "node_cpu_pct": false, "pod_ready_p99_ms": false, "latency_p50_us_pair_max": false} {
		if s, _ := catalog.Lookup(name); s.HigherIsBetter != higher {
			t.Errorf("%s: HigherIsBetter %v, want %v", name, s.HigherIsBetter, higher)
		}
	}
	// Rates add up over pairs, percentiles never average.
	for name, agg := range map[string]catalog.Aggregation{"throughput_gbps": catalog.Sum, "transactions_per_s": catalog.Sum,
		"connections_per_s": catalog.Sum, "latency_p99_us": catalog.Merged, "latency_mean_us": catalog.Merged, "jitter_ms": catalog.Mean} {
		if s, _ := catalog.Lookup(name); s.Pairs != agg {
			t.Errorf("%s: pairs aggregation %v, want %v", name, s.Pairs, agg)
		}
	}
}

// Signed figures have a negative side, percentages stop at 100: an interval clipped to a
// metric's bounds must never exclude a value the metric can take.
func TestBoundsOfSignedAndPercentFigures(t *testing.T) {
	for name, want := range map[string][2]float64{
		catalog.SplitError: {-100, 100}, catalog.SplitAbsError: {0, 100}, catalog.HTTPErrors: {0, 100}, catalog.SplitShare: {0, 100}, catalog.Loss: {0, 100},
	} {
		if lo, hi := catalog.Bounds(name); lo != want[0] || hi != want[1] {
			t.Errorf("%s: bounds [%v, %v], want [%v, %v]", name, lo, hi, want[0], want[1])
		}
	}
}
