package analysis

import (
	"math"
	"testing"

	"github.com/cnibench/cnibench/internal/catalog"
	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/stats"
)

// TestUDPVerdictIsLoss checks that a udp-stream verdict ranks the loss at the offered rate on
// the difference scale, where the throughput (the offered rate on every path) ranks nothing
// and a ratio against a loss of 0 does not exist.
func TestUDPVerdictIsLoss(t *testing.T) {
	loss := map[string][]float64{"a": {0, 0, 0, 0, 0}, "b": {1.9, 2.2, 2.0, 2.1, 1.8}}
	var samples []record.Sample
	for target, xs := range loss {
		for i, x := range xs {
			samples = append(samples, record.Sample{RunID: "r", Round: i + 1, Target: target, Path: "cross-node",
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

// TestPct: two significant digits, no exponent, no trailing zeros.
func TestPct(t *testing.T) {
	for v, want := range map[float64]string{150: "150", 1.5e5: "150000", 12.34: "12", 3.44: "3.4", 2: "2", 0.0213: "0.021", 0.30: "0.3", -0.052: "-0.052", 0: "0"} {
		if got := Pct(v); got != want {
			t.Errorf("Pct(%v) = %q, want %q", v, got, want)
		}
	}
}

// TestPointsMargin: loss is equivalent within the (1+m)² factor that moves a TCP flow by m,
// and never within less than m points: ±0.02 pp at the default 2 % up to 0.5 % loss, ±0.2 pp
// at 5 % loss (where m·100 points, ±2 pp, called 0.1 % and 1.5 % equivalent).
func TestPointsMargin(t *testing.T) {
	for _, c := range []struct{ level, want float64 }{{0, 0.02}, {0.3, 0.02}, {1, 0.0404}, {5, 0.202}} {
		if got := PointsMargin(0.02, c.level); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("PointsMargin(2 %%, %v %%) = %v pp, want %v", c.level, got, c.want)
		}
	}
	e := Ranked{Points: true, Mean: 1.5, Diff: 1.4, Est: stats.Estimate{Center: 1.4, SE: 0.1, DF: 9}, NA: 10, NB: 10}
	if Equivalent(e, 0.02) {
		t.Errorf("0.1 %% against 1.5 %% loss called equivalent at ±%s", MarginText(e, 0.02))
	}
	e = Ranked{Mean: 1, Est: stats.Estimate{Center: 0.001, SE: 0.002, DF: 9}, NA: 10, NB: 10}
	if !Equivalent(e, 0.02) || Equivalent(e, 0) {
		t.Errorf("a 0.1 %% ratio ±0.2 %% at 10 rounds: equivalent %v at ±2 %%, %v without a margin", Equivalent(e, 0.02), Equivalent(e, 0))
	}
}
