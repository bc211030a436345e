package stats

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/stat"
)

// TestEquivalenceP pins TOST to SciPy 1.17 (max(scipy.stats.t.cdf((c-hi)/se, df),
// scipy.stats.t.sf((c-lo)/se, df))) and checks its level: a true shift on the margin is
// called inside at most alpha of the time (20000 normal draws of 5, measured 0.049).
func TestEquivalenceP(t *testing.T) {
	for _, c := range []struct {
		e      Estimate
		lo, hi float64
		want   float64
	}{
		{Estimate{0.01, 0.005, 4}, -0.02, 0.02, 0.05805826175840778},
		{Estimate{0.03, 0.004, 7.5}, -0.02, 0.02, 0.9805898708631872},
		{Estimate{0.01, 0, 4}, -0.02, 0.02, 0},
		{Estimate{0.03, 0, 4}, -0.02, 0.02, 1},
	} {
		if got := EquivalenceP(c.e, c.lo, c.hi); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("EquivalenceP(%+v, %v, %v) = %.16g, want %.16g", c.e, c.lo, c.hi, got, c.want)
		}
	}
	const margin, alpha, trials, n = 0.02, 0.05, 20000, 5
	r := rand.New(rand.NewPCG(61, 67))
	hits := 0
	for range trials {
		d := make([]float64, n)
		for i := range d {
			d[i] = margin + 0.01*r.NormFloat64()
		}
		m, s := stat.MeanStdDev(d, nil)
		if EquivalenceP(Estimate{m, s / math.Sqrt(n), n - 1}, -margin, margin) < alpha {
			hits++
		}
	}
	rate := float64(hits) / trials
	t.Logf("a shift on the margin called equivalent %.4f of the time", rate)
	if rate > alpha+0.004 {
		t.Errorf("a shift on the margin called equivalent %.4f of the time, want at most %.2f", rate, alpha)
	}
}
