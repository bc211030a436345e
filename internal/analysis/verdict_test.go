package analysis

import (
	"math"
	"testing"

	"github.com/cnibench/cnibench/internal/catalog"
	"github.com/cnibench/cnibench/internal/store"
)

// TestUDPVerdictIsLoss checks that a udp-stream verdict ranks the loss at the offered rate on
// the difference scale, where the throughput (the offered rate on every path) ranks nothing
// and a ratio against a loss of 0 does not exist.
func TestUDPVerdictIsLoss(t *testing.T) {
	loss := map[string][]float64{"a": {0, 0, 0, 0, 0}, "b": {1.9, 2.2, 2.0, 2.1, 1.8}}
	var samples []store.Sample
	for target, xs := range loss {
		for i, x := range xs {
			samples = append(samples, store.Sample{RunID: "r", Round: i + 1, Target: target, Path: "cross-node",
				Workload: "udp-stream/1300B@500M", Pairs: 1,
				Metrics: map[string]float64{catalog.Throughput: 0.498, catalog.Loss: x}})
		}
	}
	lines := Verdict(samples)
	if len(lines) != 1 || lines[0].Metric != catalog.Loss {
		t.Fatalf("verdict lines %+v, want one on %s", lines, catalog.Loss)
	}
	l := lines[0]
	if l.Entries[0].Target != "a" || !l.Entries[0].Points {
		t.Fatalf("best entry %+v, want a (no loss) on the difference scale", l.Entries[0])
	}
	b := l.Entries[1]
	if b.Verdict != "worse" || !b.Points || !b.Paired || math.Abs(b.Diff-2.0) > 1e-9 || !(b.DiffLow > 0 && b.DiffHigh > b.Diff) {
		t.Errorf("entry b %+v, want worse by 2 pp, paired, interval above 0", b)
	}
	// The loss of a tcp-stream workload, had it one, would not change its verdict metric.
	if got := VerdictMetric("tcp-stream/1", map[string]float64{catalog.Throughput: 1, catalog.Loss: 1}); got != catalog.Throughput {
		t.Errorf("tcp-stream's verdict metric %s", got)
	}
}
