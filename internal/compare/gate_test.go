package compare

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/stats"
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
		name    string
		res     Result
		tol     float64
		metrics []string
		want    []string // metrics that fail the gate
	}{
		// CPU per GB 1.3x: worse beyond 5 %, within 40 %; throughput is better, latency equal.
		{"cilium, 5 %, CPU gated", ciliumVsBridge, 0.05, []string{"cpu_s_per_gb"}, []string{"cpu_s_per_gb"}},
		{"cilium, 40 %, CPU gated", ciliumVsBridge, 0.40, []string{"cpu_s_per_gb"}, nil},
		// By default only the cell's verdict metric is gated.
		{"cilium, 5 %", ciliumVsBridge, 0.05, nil, nil},
		// Throughput 10/12 = 0.83: worse beyond 10 %, within 20 %.
		{"bridge, 10 %", bridgeVsCilium, 0.10, nil, []string{"throughput_gbps"}},
		{"bridge, 20 %", bridgeVsCilium, 0.20, nil, nil},
	}
	for _, c := range cases {
		g := Gate{Tolerance: c.tol, Metrics: c.metrics}
		var got []string
		for _, r := range g.Regressions(c.res) {
			got = append(got, r.Metric)
		}
		if strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("%s: regressions %v, want %v", c.name, got, c.want)
		}
		err := g.Check(c.res)
		var inc *InconclusiveError
		if failed := err != nil && !errors.As(err, &inc); failed != (len(c.want) > 0) {
			t.Errorf("%s: Check = %v", c.name, err)
		}
		if len(c.want) > 0 && (err == nil || !strings.Contains(err.Error(), c.want[0])) {
			t.Errorf("%s: the error does not name %s: %v", c.name, c.want[0], err)
		}
	}
}

// TestGateInconclusive: a gate whose rows could not catch its Detect neither passes nor fails:
// its error carries ExitInconclusive and says how many rounds would do, and a row without an
// estimate or a family without rows is inconclusive too.
func TestGateInconclusive(t *testing.T) {
	noisy := Row{Path: "cross-node", Workload: "tcp-stream/1", Pairs: 1, Metric: "throughput_gbps", Direction: "higher",
		Blocks: 3, NA: 3, NB: 3, Est: stats.Estimate{Center: 0.01, SE: 0.05, DF: 4}}
	res := Result{Rows: []Row{noisy}}
	judged := Gate{}.Evaluate(res)
	if judged.Outcome != GateInconclusive || !judged.Rows[0].Weak || judged.Rows[0].Rounds <= 3 {
		t.Fatalf("3 noisy rounds: %+v", judged)
	}
	err := judged.Err(res)
	var inc *InconclusiveError
	if !errors.As(err, &inc) || inc.ExitStatus() != ExitInconclusive || !strings.Contains(err.Error(), fmt.Sprintf("--repetitions %d", judged.Rows[0].Rounds)) {
		t.Errorf("Err = %v", err)
	}
	quiet := noisy
	quiet.Blocks, quiet.NA, quiet.NB, quiet.Est = 10, 10, 10, stats.Estimate{Center: 0.01, SE: 0.005, DF: 18}
	if got := (Gate{}).Evaluate(Result{Rows: []Row{quiet}}); got.Outcome != GatePass {
		t.Errorf("10 quiet rounds: %s, detectable %.3g", got.Outcome, got.Rows[0].Detectable)
	}
	none := noisy
	none.Est = stats.Estimate{Center: math.NaN(), SE: math.NaN(), DF: math.NaN()}
	if got := (Gate{}).Evaluate(Result{Rows: []Row{none, quiet}}); got.Outcome != GateInconclusive {
		t.Errorf("a row without an estimate: %s", got.Outcome)
	}
	if got := (Gate{}).Evaluate(Result{}); got.Outcome != GateInconclusive {
		t.Errorf("nothing gated: %s", got.Outcome)
	}
}

// TestGateToleranceRates: the tolerance means what the help says. On simulated paired rounds
// (5 rounds, 5 % spread of the per-round log ratio), a true worsening equal to the tolerance
// fails the gate at most alpha of the time, and one of twice the tolerance is caught with the
// power the gate printed for it.
func TestGateToleranceRates(t *testing.T) {
	const (
		tol, sd = 0.05, 0.05
		rounds  = 5
		trials  = 4000
	)
	rng := rand.New(rand.NewPCG(11, 12))
	failRate := func(worse float64) (rate, detectable float64) {
		fails := 0
		for range trials {
			a, b := make([]stats.Obs, rounds), make([]stats.Obs, rounds)
			for i := range a {
				block := fmt.Sprint(i)
				base := 10 * math.Exp(0.2*rng.NormFloat64())
				a[i] = stats.Obs{Block: block, Value: base}
				b[i] = stats.Obs{Block: block, Value: base * (1 - worse) * math.Exp(sd*rng.NormFloat64())}
			}
			row := compareRow(key{Cell{"cross-node", "tcp-stream/1", 1}, "throughput_gbps"}, a, b, 0, 0, stats.PairAuto, stats.CompareOptions{})
			judged := Gate{Tolerance: tol}.Evaluate(Result{Rows: []Row{row}})
			if judged.Outcome == GateFail {
				fails++
			}
			detectable += judged.Rows[0].Detectable / trials
		}
		return float64(fails) / trials, detectable
	}
	atTol, _ := failRate(tol)
	twice, detectable := failRate(2 * tol)
	t.Logf("true worsening %.0f %%: fails %.3f; %.0f %%: fails %.3f (mean detectable %.3g %%)", tol*100, atTol, 2*tol*100, twice, detectable*100)
	if atTol > 0.055 {
		t.Errorf("a worsening equal to the tolerance fails %.3f of the time, want <= 0.05", atTol)
	}
	if twice < 0.5 {
		t.Errorf("twice the tolerance caught %.3f of the time", twice)
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
		Verdict: "worse", Points: true, Diff: 0.8, DiffLow: 0.5, DiffHigh: 1.1, Ratio: math.NaN(), PAdjusted: 0.01,
		Paired: true, Blocks: 10, NA: 10, NB: 10, Est: stats.Estimate{Center: 0.8, SE: 0.13, DF: 9}}
	res := Result{Rows: []Row{row}}
	if regs := (Gate{Tolerance: 0}).Regressions(res); len(regs) != 1 {
		t.Errorf("tolerance 0: %d regressions, want 1", len(regs))
	}
	if regs := (Gate{Tolerance: 0.01}).Regressions(res); len(regs) != 0 {
		t.Errorf("tolerance 1 %% (1 pp) against +0.8 pp: %d regressions, want 0", len(regs))
	}
	err := (Gate{Tolerance: 0.001}).Check(res)
	if err == nil || !strings.Contains(err.Error(), "+0.8 pp [0.5, 1.1] pp") || !strings.Contains(err.Error(), "0.8 pp worse") {
		t.Errorf("Check = %v, want the difference in points", err)
	}
}
