package compare

import (
	"context"
	"math"
	"strings"
	"testing"
)

func TestGate(t *testing.T) {
	db := fill(t)
	compareSides := func(a, b string) Result {
		t.Helper()
		sa, _ := ParseSide(a)
		sb, _ := ParseSide(b)
		res, err := Compare(context.Background(), db, Options{A: sa, B: sb, Seed: DefaultSeed})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	ciliumVsBridge := compareSides(run1+"/bridge", run1+"/cilium-vxlan")
	bridgeVsCilium := compareSides(run1+"/cilium-vxlan", run1+"/bridge")
	cases := []struct {
		name string
		res  Result
		tol  float64
		want []string // metrics that fail the gate
	}{
		// CPU per GB 1.3x: worse beyond 5 %, within 40 %; throughput is better, latency equal.
		{"cilium, 5 %", ciliumVsBridge, 0.05, []string{"cpu_s_per_gb"}},
		{"cilium, 40 %", ciliumVsBridge, 0.40, nil},
		// Throughput 10/12 = 0.83: worse beyond 10 %, within 20 %.
		{"bridge, 10 %", bridgeVsCilium, 0.10, []string{"throughput_gbps"}},
		{"bridge, 20 %", bridgeVsCilium, 0.20, nil},
	}
	for _, c := range cases {
		g := Gate{Tolerance: c.tol}
		var got []string
		for _, r := range g.Regressions(c.res) {
			got = append(got, r.Metric)
		}
		if strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("%s: regressions %v, want %v", c.name, got, c.want)
		}
		err := g.Check(c.res)
		if (err != nil) != (len(c.want) > 0) {
			t.Errorf("%s: Check = %v", c.name, err)
		}
		if err != nil && !strings.Contains(err.Error(), c.want[0]) {
			t.Errorf("%s: the error does not name %s: %v", c.name, c.want[0], err)
		}
	}
}

func TestParseTolerance(t *testing.T) {
	for in, want := range map[string]float64{"5%": 0.05, "0.05": 0.05, "0%": 0, " 12.5% ": 0.125} {
		if got, err := ParseTolerance(in); err != nil || got != want {
			t.Errorf("ParseTolerance(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "x", "-1%", "100%", "5%%"} {
		if _, err := ParseTolerance(in); err == nil || !strings.Contains(err.Error(), "expected a percentage") {
			t.Errorf("ParseTolerance(%q): %v, want an error", in, err)
		}
	}
}

// TestGateOnLoss checks that a loss regression is judged in points: the tolerance, a
// fraction, allows that many percentage points, and the error shows the difference.
func TestGateOnLoss(t *testing.T) {
	row := Row{Path: "cross-node", Workload: "udp-stream/1300B@500M", Pairs: 1, Metric: "loss_pct", Direction: "lower",
		Verdict: "worse", Points: true, Diff: 0.8, DiffLow: 0.5, DiffHigh: 1.1, Ratio: math.NaN(), PAdjusted: 0.01}
	res := Result{Rows: []Row{row}}
	if regs := (Gate{Tolerance: 0}).Regressions(res); len(regs) != 1 {
		t.Errorf("tolerance 0: %d regressions, want 1", len(regs))
	}
	if regs := (Gate{Tolerance: 0.01}).Regressions(res); len(regs) != 0 {
		t.Errorf("tolerance 1 %% (1 pp) against +0.8 pp: %d regressions, want 0", len(regs))
	}
	err := (Gate{Tolerance: 0.005}).Check(res)
	if err == nil || !strings.Contains(err.Error(), "+0.8 pp [0.5, 1.1] pp") {
		t.Errorf("Check = %v, want the difference in points", err)
	}
}
