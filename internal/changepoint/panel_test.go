package changepoint

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The simulation panel mimics this machine's run-to-run noise: 30 run
// means with lognormal noise, a 10 % step at run 15.
const (
	panelRuns   = 30
	panelStepAt = 15
	panelSeries = 2000
)

// lognormal returns n values of mean 100 with lognormal noise of the given
// coefficient of variation, the values from stepAt on multiplied by factor.
func lognormal(r *rand.Rand, n int, cv float64, stepAt int, factor float64) []float64 {
	s := math.Sqrt(math.Log1p(cv * cv))
	x := make([]float64, n)
	for i := range x {
		x[i] = 100 * math.Exp(s*r.NormFloat64()-s*s/2)
		if i >= stepAt {
			x[i] *= factor
		}
	}
	return x
}

// rates holds what a panel case measured.
type rates struct {
	hit    float64 // share of series with a change point within one run of the step
	found  float64 // share of series with any change point
	other  float64 // share of series with a change point farther from the step (any, when flat)
	oracle float64 // share whose least-squares split is within one run of the step
}

// lsSplit is the least-squares location of a single step, the maximum
// likelihood estimate for Gaussian noise when the series is known to have
// exactly one step. No detector that must also decide whether there is a
// step can place it better on average, so it is the yardstick for hit.
func lsSplit(x []float64, minSize int) int {
	best, at := math.Inf(1), 0
	for tau := minSize; tau <= len(x)-minSize; tau++ {
		l, r := x[:tau], x[tau:]
		if s := sumSq(l, mean(l)) + sumSq(r, mean(r)); s < best {
			best, at = s, tau
		}
	}
	return at
}

// runPanel measures one case with its own seed, so each case is
// reproducible on its own.
func runPanel(t *testing.T, cv, factor float64, seed uint64) rates {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	near := func(i int) bool { return factor != 1 && i >= panelStepAt-1 && i <= panelStepAt+1 }
	var hits, found, others, oracle int
	for range panelSeries {
		x := lognormal(r, panelRuns, cv, panelStepAt, factor)
		cps, err := Detect(x, Options{})
		if err != nil {
			t.Fatalf("Detect: %v", err)
		}
		hit, other := false, false
		for _, c := range cps {
			hit = hit || near(c.Index)
			other = other || !near(c.Index)
		}
		hits += b2i(hit)
		others += b2i(other)
		found += b2i(len(cps) > 0)
		oracle += b2i(near(lsSplit(x, DefaultMinSize)))
	}
	f := func(k int) float64 { return float64(k) / panelSeries }
	return rates{hit: f(hits), found: f(found), other: f(others), oracle: f(oracle)}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestSimulationPanel measures detection and false alarms on this
// machine's noise. A 10 % step is only two standard deviations at CV 5 %:
// there no method places the step within one run in 90 % of 30-run series
// (least squares, knowing there is exactly one step, manages about 87 % of
// drops and 82 % of rises), so the test holds the detector to that
// yardstick instead, and to finding the step at all.
func TestSimulationPanel(t *testing.T) {
	for ci, cv := range []float64{0.03, 0.05, 0.08} {
		flat := runPanel(t, cv, 1, uint64(100*ci+1))
		for fi, factor := range []float64{0.9, 1.1} {
			st := runPanel(t, cv, factor, uint64(100*ci+2+fi))
			t.Logf("CV %.0f%% step x%.1f: within ±1 run %5.1f%% (least squares %5.1f%%), found %5.1f%%, "+
				"other change points %4.1f%%", cv*100, factor, st.hit*100, st.oracle*100, st.found*100, st.other*100)
			if cv != 0.05 {
				continue // logged for the record; the bounds are set at this machine's 5 %
			}
			if st.found < 0.95 {
				t.Errorf("CV 5%% x%.1f: step found in %.1f%% of series, want >= 95%%", factor, st.found*100)
			}
			// Five points of slack: the steps that are not significant at the
			// corrected level are missed, while least squares always places one.
			if st.hit < st.oracle-0.05 {
				t.Errorf("CV 5%% x%.1f: step placed within one run in %.1f%% of series, least squares %.1f%%, want within 5 points",
					factor, st.hit*100, st.oracle*100)
			}
		}
		t.Logf("CV %.0f%% flat: false alarms %.1f%%", cv*100, flat.other*100)
		if cv == 0.05 && flat.other > 0.05 {
			t.Errorf("CV 5%%: false alarms on flat series %.1f%%, want <= 5%%", flat.other*100)
		}
	}
}
