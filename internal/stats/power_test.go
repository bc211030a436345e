package stats

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// TestPowerTAgainstSciPy: the power and the detectable shift match scipy.stats.nct (1.17.1):
// nct.sf(t.ppf(1-alpha, df), df, ncp), and brentq on it for a power of 0.8.
func TestPowerTAgainstSciPy(t *testing.T) {
	for _, c := range []struct{ df, ncp, alpha, want float64 }{
		{2, 3, 0.05, 0.6172222311084434},
		{4, 2.5, 0.05, 0.6601200192046965},
		{6, 3.2, 0.0025, 0.28099102444706275},
		{9.5, 2.0, 0.01, 0.27308130489979165},
		{30, 2.8, 0.05, 0.862387945620964},
	} {
		if got := PowerT(c.df, c.ncp, c.alpha); math.Abs(got-c.want) > 1e-6 {
			t.Errorf("PowerT(%v, %v, %v) = %v, SciPy %v", c.df, c.ncp, c.alpha, got, c.want)
		}
	}
	for _, c := range []struct{ df, alpha, want float64 }{
		{2, 0.05, 3.9789966159185397},
		{6, 0.05, 2.8220994288410837},
		{6, 0.0025, 5.4584588889858034},
		{19, 0.0025, 4.076686992458801},
	} {
		if got := DetectableNCP(c.df, c.alpha, DefaultPower); math.Abs(got-c.want) > 1e-4 {
			t.Errorf("DetectableNCP(%v, %v) = %v, SciPy %v", c.df, c.alpha, got, c.want)
		}
	}
}

// TestRoundsForCatches: at the rounds RoundsFor prescribes, a paired one-sided test at the
// level given catches the shift at least four times in five (and not far more: the count is
// the fewest), and with the plug-in normal approximation it would have prescribed fewer rounds
// that catch it less often.
func TestRoundsForCatches(t *testing.T) {
	const (
		sd, shift, alpha = 0.08, 0.10, 0.0025
		trials           = 4000
	)
	n := RoundsFor(sd, shift, 1, alpha, DefaultPower, 200)
	if n < MinPairedBlocks {
		t.Fatalf("RoundsFor = %d", n)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	caught := func(n int) float64 {
		hits := 0
		for range trials {
			d := make([]float64, n)
			for i := range d {
				d[i] = shift + sd*rng.NormFloat64()
			}
			m, s := stat.MeanStdDev(d, nil)
			if MarginTest(Estimate{Center: m, SE: s / math.Sqrt(float64(n)), DF: float64(n - 1)}, 0) < alpha {
				hits++
			}
		}
		return float64(hits) / trials
	}
	got, fewer := caught(n), caught(n-1)
	t.Logf("%d rounds: caught %.3f; %d rounds: %.3f", n, got, n-1, fewer)
	if got < 0.78 || fewer > 0.80 {
		t.Errorf("RoundsFor = %d: caught %.3f there and %.3f at one round fewer, want >= 0.8 and < 0.8", n, got, fewer)
	}
	z := distuv.UnitNormal
	plugIn := math.Ceil(math.Pow((z.Quantile(1-alpha)+z.Quantile(DefaultPower))*sd/shift, 2))
	if plugIn >= float64(n) {
		t.Errorf("the normal plug-in asks %v rounds, not fewer than the t's %d", plugIn, n)
	}
}

// TestMarginTestLevel: a true shift equal to the margin is called at most alpha of the time.
func TestMarginTestLevel(t *testing.T) {
	const (
		margin, alpha = 0.05, 0.05
		trials, n     = 20000, 5
	)
	rng := rand.New(rand.NewPCG(5, 6))
	hits := 0
	for range trials {
		d := make([]float64, n)
		for i := range d {
			d[i] = margin + 0.1*rng.NormFloat64()
		}
		m, s := stat.MeanStdDev(d, nil)
		if MarginTest(Estimate{Center: m, SE: s / math.Sqrt(n), DF: n - 1}, margin) < alpha {
			hits++
		}
	}
	if rate := float64(hits) / trials; math.Abs(rate-alpha) > 0.006 {
		t.Errorf("shift at the margin called %.4f of the time, want %.2f", rate, alpha)
	}
}
