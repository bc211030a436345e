package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestSummarizeInKeepsTheDomain(t *testing.T) {
	// Two latency samples far apart: the t-interval (t = 12.7) reaches below zero.
	s := SummarizeIn([]float64{1211, 3900}, NonNegative)
	if s.Interval != IntervalClipped || s.CILow != 0 || s.CIHigh <= 3900 {
		t.Errorf("n=2 latency: %s [%v, %v], want t-clipped [0, >3900]", s.Interval, s.CILow, s.CIHigh)
	}
	plain := Summarize([]float64{1211, 3900})
	if s.CIHigh != plain.CIHigh || plain.CILow >= 0 {
		t.Errorf("clipping moved the upper bound or the t-interval was not negative: %v vs %v", s, plain)
	}
	// A busy share near its ceiling.
	pct := SummarizeIn([]float64{96.7, 99.9, 99.2}, Domain{0, 100})
	if pct.Interval != IntervalClipped || pct.CIHigh != 100 || pct.CILow <= 0 {
		t.Errorf("CPU %%: %s [%v, %v], want the upper bound clipped to 100", pct.Interval, pct.CILow, pct.CIHigh)
	}
	// A symmetric sample well inside the domain keeps its t-interval.
	sym := []float64{10, 11, 9, 10.5, 9.5, 10.2, 9.8, 10.1, 9.9, 10.4, 9.6, 10}
	if got, want := SummarizeIn(sym, NonNegative), Summarize(sym); got.Interval != IntervalT || got.CILow != want.CILow || got.CIHigh != want.CIHigh {
		t.Errorf("symmetric sample: %s [%v, %v], want t [%v, %v]", got.Interval, got.CILow, got.CIHigh, want.CILow, want.CIHigh)
	}
}

func TestSummarizeInSkewedSample(t *testing.T) {
	// Ten fast connections and two stalled ones: skewed right, the t-interval reaches below
	// zero and is clipped there, its upper bound kept.
	xs := []float64{100, 102, 98, 101, 99, 103, 97, 100, 102, 98, 1500, 1400}
	s, plain := SummarizeIn(xs, NonNegative), Summarize(xs)
	if s.Interval != IntervalClipped || s.CILow != 0 || s.CIHigh != plain.CIHigh || plain.CILow >= 0 {
		t.Fatalf("skewed sample: %s [%v, %v], want t-clipped [0, %v]", s.Interval, s.CILow, s.CIHigh, plain.CIHigh)
	}
	if math.Abs(s.RelCI-(s.CIHigh-s.CILow)/2/s.Mean) > 1e-12 {
		t.Errorf("RelCI %v does not match the interval", s.RelCI)
	}
}

// TestSummarizeInCoverage draws exponential samples (skewed, non-negative) and counts how
// often the interval covers the true mean: close to 95 %, never below 85 %.
func TestSummarizeInCoverage(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for _, n := range []int{3, 12, 30} {
		const trials = 400
		covered, negative := 0, 0
		for range trials {
			xs := make([]float64, n)
			for i := range xs {
				xs[i] = rng.ExpFloat64() // mean 1
			}
			s := SummarizeIn(xs, NonNegative)
			if s.CILow <= 1 && 1 <= s.CIHigh {
				covered++
			}
			if s.CILow < 0 {
				negative++
			}
		}
		if cov := float64(covered) / trials; cov < 0.85 || cov > 0.995 {
			t.Errorf("n=%d: coverage %.3f of the true mean, want about 0.95", n, cov)
		}
		if negative > 0 {
			t.Errorf("n=%d: %d intervals below zero", n, negative)
		}
	}
}

func TestBimodal(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want bool
	}{
		{[]float64{413, 420, 4617, 4600, 430, 4580}, true},       // port exhaustion in some samples
		{[]float64{10, 10.5, 11, 10.2, 10.8, 50}, false},         // one outlier is not a second group
		{[]float64{10, 11, 12, 13, 14, 15, 16, 17}, false},       // spread evenly
		{[]float64{1, 1, 9, 9}, false},                           // too few to tell
		{[]float64{5, 5, 5, 5, 5, 5}, false},                     // no spread
		{[]float64{1, 1.1, 1.2, 1.1, 8, 8.2, 8.1, 7.9}, true},    // two clusters of four
		{[]float64{1, 1.1, 1.2, 1.1, 1, 1.3, 1.2, 8, 8.2}, true}, // 7 and 2 of 9
	} {
		if got := Summarize(c.xs).Bimodal; got != c.want {
			t.Errorf("bimodal(%v) = %v, want %v", c.xs, got, c.want)
		}
	}
}
