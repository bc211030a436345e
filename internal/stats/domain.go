package stats

import (
	"math"
	"math/rand/v2"
	"slices"
)

// Domain is the range a metric's values can take: a latency or a rate is never negative, a
// loss or a busy share stays within [0, 100]. An interval printed for such a metric must stay
// inside it.
type Domain struct{ Lo, Hi float64 }

// Domains of the usual kinds of figure.
var (
	Real        = Domain{math.Inf(-1), math.Inf(1)}
	NonNegative = Domain{0, math.Inf(1)}
)

// Interval methods, as Summary.Interval names them.
const (
	// IntervalT is Student's t-interval of the mean.
	IntervalT = "t"
	// IntervalBootstrap is the percentile bootstrap of the mean: for a skewed sample, whose
	// t-interval is too narrow on the long side, or for one whose t-interval leaves the
	// domain. It never leaves [min, max] of the sample.
	IntervalBootstrap = "bootstrap"
	// IntervalClipped is the t-interval intersected with the domain, for samples too small
	// for a bootstrap: the true mean lies in the domain, so the intersection covers it
	// whenever the t-interval does, and the level is kept.
	IntervalClipped = "t-clipped"
)

const (
	// bootstrapMinN is the smallest sample the bootstrap interval is used for: below it the
	// resamples take too few distinct values and the interval is far too narrow.
	bootstrapMinN = 10
	// skewLimit is the sample skewness beyond which the t-interval's symmetry misleads.
	skewLimit = 1.0
	// meanResamples is the number of bootstrap resamples of a mean; 4000 puts the Monte
	// Carlo error of the 2.5 % and 97.5 % points well below the interval's own width.
	meanResamples = 4000
)

// SummarizeIn is Summarize for a metric whose values lie in d: its interval is the
// t-interval when that is sound, and otherwise the percentile bootstrap or, for small
// samples, the t-interval clipped to d (Summary.Interval says which). The interval never
// contains impossible values.
func SummarizeIn(xs []float64, d Domain) Summary {
	s := Summarize(xs)
	if s.N < 2 || s.StdDev == 0 || math.IsNaN(s.CILow) {
		return s
	}
	sorted := withoutNaN(xs)
	slices.Sort(sorted)
	outside := s.CILow < d.Lo || s.CIHigh > d.Hi
	skewed := s.N >= bootstrapMinN && math.Abs(skewness(sorted, s.Mean)) > skewLimit
	switch {
	case !outside && !skewed:
		return s
	case s.N >= bootstrapMinN:
		s.CILow, s.CIHigh = bootstrapMeanCI(sorted)
		s.Interval = IntervalBootstrap
	default:
		s.CILow, s.CIHigh = math.Max(s.CILow, d.Lo), math.Min(s.CIHigh, d.Hi)
		s.Interval = IntervalClipped
	}
	s.RelCI = (s.CIHigh - s.CILow) / 2 / math.Abs(s.Mean)
	return s
}

// skewness is the sample skewness g1 = m3 / m2^1.5 (moments about the mean).
func skewness(xs []float64, mean float64) float64 {
	var m2, m3 float64
	for _, x := range xs {
		d := x - mean
		m2 += d * d
		m3 += d * d * d
	}
	n := float64(len(xs))
	m2, m3 = m2/n, m3/n
	if m2 == 0 {
		return 0
	}
	return m3 / math.Pow(m2, 1.5)
}

// bootstrapMeanCI is the 95 % percentile-bootstrap interval of the mean of sorted. The
// stream is seeded from the data, so a stored run always prints the same interval.
func bootstrapMeanCI(sorted []float64) (lo, hi float64) {
	var seed uint64
	for _, x := range sorted {
		seed = seed*1099511628211 ^ math.Float64bits(x)
	}
	src := rand.NewPCG(seed, pcgStream)
	n := uint64(len(sorted))
	means := make([]float64, meanResamples)
	for r := range means {
		var sum float64
		for range n {
			sum += sorted[boundedDraw(src, n)]
		}
		means[r] = sum / float64(n)
	}
	slices.Sort(means)
	alpha := 1 - ciLevel
	return quantileSorted(means, alpha/2), quantileSorted(means, 1-alpha/2)
}

// bimodal reports whether a sorted sample falls into two groups: split at its widest gap,
// each side holds at least two values and a fifth of the sample, and the gap spans more
// than half the sample's range. Such a cell (a path that sometimes takes a slow branch) has
// a mean that describes neither group, and its interval says little.
func bimodal(sorted []float64) bool {
	n := len(sorted)
	if n < 6 {
		return false
	}
	span := sorted[n-1] - sorted[0]
	if span <= 0 {
		return false
	}
	at, gap := 0, 0.0
	for i := 1; i < n; i++ {
		if g := sorted[i] - sorted[i-1]; g > gap {
			at, gap = i, g
		}
	}
	least := max(2, (n+4)/5)
	return gap > span/2 && at >= least && n-at >= least
}
