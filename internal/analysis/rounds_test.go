package analysis

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cnibench/cnibench/internal/catalog"
	"github.com/cnibench/cnibench/internal/record"
)

// TestRoundsOrderedByRound gives the samples of a cell out of order, with a warm-up, a failed
// sample, an outlier and a setup figure, and checks that each target's series is its measured
// samples by round, summarised as the cell's row is.
func TestRoundsOrderedByRound(t *testing.T) {
	cell := func(target string, seq, round int, v float64) record.Sample {
		return record.Sample{RunID: "r", Seq: seq, Round: round, Target: target, Path: "cross-node", Workload: "tcp-stream/1",
			Metrics: map[string]float64{catalog.Throughput: v, catalog.Retransmits: 100 * v}}
	}
	samples := []record.Sample{
		cell("b", 20, 3, 9.1), cell("a", 1, 5, 10.4), cell("a", 2, 2, 10.1), cell("b", 21, 1, 9.3),
		{RunID: "r", Seq: 3, Round: 0, Warmup: true, Target: "a", Path: "cross-node", Workload: "tcp-stream/1", Metrics: map[string]float64{catalog.Throughput: 99}},
		cell("a", 4, 1, 10.0), cell("a", 5, 4, 10.2), cell("a", 6, 3, 10.3), cell("a", 7, 6, 10.2), cell("a", 8, 7, 30),
		{RunID: "r", Seq: 22, Round: 2, Target: "b", Path: "cross-node", Workload: "tcp-stream/1", Error: "iperf3: connection refused"},
		cell("b", 23, 4, 9.2),
		{RunID: "r", Seq: 30, Round: 1, Target: "a", Path: record.SetupPath, Workload: "pod-startup", Metrics: map[string]float64{"pod_ready_p50_ms": 900}},
	}
	cells := Rounds(samples)
	if len(cells) != 1 {
		t.Fatalf("%d cells, want 1 (the setup figures have no rounds): %+v", len(cells), cells)
	}
	c := cells[0]
	if c.Metric != catalog.Throughput || c.Path != "cross-node" || c.Pairs != 1 || !c.HigherIsBetter || c.Unit == "" {
		t.Fatalf("cell %+v, want cross-node tcp-stream/1 throughput", c)
	}
	if len(c.Series) != 2 || c.Series[0].Target != "a" || c.Series[1].Target != "b" {
		t.Fatalf("series %+v, want a then b", c.Series)
	}
	a, b := c.Series[0], c.Series[1]
	var rounds []int
	for _, p := range a.Points {
		rounds = append(rounds, p.Round)
	}
	if want := []int{1, 2, 3, 4, 5, 6, 7}; !slices.Equal(rounds, want) {
		t.Errorf("a's rounds %v, want %v (by round, warm-up left out)", rounds, want)
	}
	for _, p := range a.Points {
		if p.Outlier != (p.Value == 30) {
			t.Errorf("a round %d (%v): outlier %v", p.Round, p.Value, p.Outlier)
		}
	}
	if len(b.Points) != 3 || b.Points[0].Round != 1 || b.Points[1].Round != 3 || b.Points[2].Round != 4 {
		t.Errorf("b's points %+v, want rounds 1, 3, 4", b.Points)
	}
	if len(b.Failed) != 1 || b.Failed[0].Round != 2 || b.Failed[0].Error != "iperf3: connection refused" || len(a.Failed) != 0 {
		t.Errorf("failed: a %+v, b %+v; want b's round 2", a.Failed, b.Failed)
	}
	// The mean and interval drawn are the row's.
	for _, r := range Summarize(samples) {
		if r.Metric != catalog.Throughput || r.Path != "cross-node" {
			continue
		}
		s := a.Summary
		if r.Target == "b" {
			s = b.Summary
		}
		if s.N != r.Summary.N || !nearly(s.Mean, r.Summary.Mean) || !nearly(s.CILow, r.Summary.CILow) || !nearly(s.CIHigh, r.Summary.CIHigh) {
			t.Errorf("%s: series summary %+v, row %+v", r.Target, s, r.Summary)
		}
	}
}

func nearly(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) }

// TestForestIsTheVerdictsComparisons checks that the forest plot's rows are the verdict's
// comparisons, figure for figure: every entry but the reference, its ratio (loss: difference)
// and interval, its verdict and its reference.
func TestForestIsTheVerdictsComparisons(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	speed := map[string]float64{"a": 1, "b": 0.8, "c": 0.99}
	var samples []record.Sample
	for round := 1; round <= 6; round++ {
		for target, f := range speed {
			for _, path := range []string{"same-node", "cross-node"} {
				noise := 1 + 0.02*(rng.Float64()-0.5)
				samples = append(samples,
					record.Sample{RunID: "r", Round: round, Target: target, Path: path, Workload: "tcp-stream/1",
						Metrics: map[string]float64{catalog.Throughput: 10 * f * noise}},
					record.Sample{RunID: "r", Round: round, Target: target, Path: path, Workload: "udp-stream/1300B@500M",
						Metrics: map[string]float64{catalog.Throughput: 0.5, catalog.Loss: (1 - f) * 10 * noise}})
			}
		}
	}
	lines := Verdict(samples)
	rows := Forest(lines)
	want := 0
	significant := 0
	for _, l := range lines {
		for _, e := range l.Entries {
			if e.Target == l.Against {
				continue
			}
			want++
			found := false
			for _, r := range rows {
				if r.Workload != l.Workload || r.Path != l.Path || r.Name != e.Target {
					continue
				}
				found = true
				est, lo, hi := e.RatioToBest, e.RatioLow, e.RatioHigh
				if e.Points {
					est, lo, hi = e.Diff, e.DiffLow, e.DiffHigh
				}
				if r.Estimate != est || r.Low != lo || r.High != hi || r.Points != e.Points || r.Verdict != e.Verdict ||
					r.Against != l.Against || r.Metric != l.Metric || r.HigherIsBetter != l.HigherIsBetter {
					t.Errorf("row %+v, want the entry %+v of line %s %s", r, e, l.Workload, l.Path)
				}
				if r.Significant() {
					significant++
				}
			}
			if !found {
				t.Errorf("no row for %s %s %s", l.Workload, l.Path, e.Target)
			}
		}
	}
	if len(rows) != want || want != 8 {
		t.Errorf("%d rows, want %d (two per line of four)", len(rows), want)
	}
	if significant == 0 {
		t.Error("no significant row: b is 20 % slower")
	}
	for i, r := range rows {
		if r.Points != (r.Metric == catalog.Loss) {
			t.Errorf("row %d %+v: loss is compared on the difference scale, the rest as ratios", i, r)
		}
	}
}
