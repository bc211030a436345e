package stats

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// lossDraw is a UDP loss figure in percent: true mean mean, normal spread sd, clipped at 0
// (a clipped draw keeps the mean only where mean is several sd above 0).
func lossDraw(r *rand.Rand, mean, sd float64) float64 { return math.Max(0, mean+sd*r.NormFloat64()) }

// zeroInflated is loss that is 0 in most samples and a burst in some: with probability p a
// sample loses an exponential amount of mean burst.
func zeroInflated(r *rand.Rand, p, burst float64) float64 {
	if r.Float64() >= p {
		return 0
	}
	return r.ExpFloat64() * burst
}

func blocks(xs []float64) []Obs {
	out := make([]Obs, len(xs))
	for i, x := range xs {
		out[i] = Obs{Block: "r" + strconv.Itoa(i), Value: x}
	}
	return out
}

// TestPointsIntervalCoverage is the calibration panel of the difference scale: the share of
// 95 % intervals of mean(B) - mean(A) holding the true difference, paired (a shared round
// effect) and unpaired, lies in [0.93, 0.97], and with equal means the verdict calls a
// difference at most 5 % of the time, zero-inflated loss included (2000 draws each).
func TestPointsIntervalCoverage(t *testing.T) {
	const reps = 2000
	r := rand.New(rand.NewPCG(3, 5))
	for _, n := range []int{3, 5, 10} {
		for _, paired := range []bool{true, false} {
			covered := 0
			for range reps {
				a, b := make([]float64, n), make([]float64, n)
				for i := range n {
					round := 0.0
					if paired {
						round = 0.5 * r.NormFloat64() // both sides of a round move together
					}
					a[i] = lossDraw(r, 3+round, 0.3)
					b[i] = lossDraw(r, 3.5+round, 0.3)
				}
				pa, pb := blocks(a), blocks(b)
				if !paired {
					pb = blocks(append([]float64{}, b...))
					for i := range pb {
						pb[i].Block = "other" + pb[i].Block // no shared blocks
					}
				}
				c, err := ComparePoints(pa, pb, false, PairAuto, CompareOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if c.Paired != paired || !c.Points {
					t.Fatalf("n=%d: paired %v, points %v", n, c.Paired, c.Points)
				}
				if c.DiffLow <= 0.5 && 0.5 <= c.DiffHigh {
					covered++
				}
			}
			cov := float64(covered) / reps
			t.Logf("difference interval, n=%d a side, paired=%v: coverage %.3f", n, paired, cov)
			if cov < 0.93 || cov > 0.97 {
				t.Errorf("n=%d paired=%v: coverage %.3f, want [0.93, 0.97]", n, paired, cov)
			}
		}
	}
	for _, n := range []int{5, 10} {
		called := 0
		for range reps {
			a, b := make([]float64, n), make([]float64, n)
			for i := range n {
				a[i], b[i] = zeroInflated(r, 0.3, 0.5), zeroInflated(r, 0.3, 0.5)
			}
			c, err := ComparePoints(blocks(a), blocks(b), false, PairAuto, CompareOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if c.Verdict == VerdictBetter || c.Verdict == VerdictWorse {
				called++
			}
		}
		rate := float64(called) / reps
		t.Logf("zero-inflated loss (30 %% of samples lose), equal means, n=%d: false verdicts %.3f", n, rate)
		if rate > 0.05 {
			t.Errorf("n=%d: false verdict rate %.3f, want at most 0.05", n, rate)
		}
	}
}

// TestComparePointsZeros checks the cases a ratio cannot take: a baseline of 0, both sides 0.
func TestComparePointsZeros(t *testing.T) {
	zero := blocks([]float64{0, 0, 0, 0})
	lossy := blocks([]float64{1.2, 0.9, 1.1, 1.0})
	c, err := ComparePoints(zero, lossy, false, PairAuto, CompareOptions{})
	if err != nil || c.Verdict != VerdictWorse || !c.Paired || math.Abs(c.Diff-1.05) > 1e-9 || c.DiffLow <= 0 || !math.IsNaN(c.Ratio) {
		t.Errorf("0 against about 1 %%: %+v, %v", c, err)
	}
	c, err = ComparePoints(zero, zero, false, PairAuto, CompareOptions{})
	if err != nil || c.Verdict != VerdictNone || c.Diff != 0 || c.PValue != 1 {
		t.Errorf("0 against 0: %+v, %v", c, err)
	}
	if _, err := ComparePoints(blocks([]float64{1}), lossy, false, PairAuto, CompareOptions{}); err == nil {
		t.Error("one value against four: no error")
	}
}
