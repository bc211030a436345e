package stats

import (
	"math"
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
	// IntervalClipped is the t-interval intersected with the domain: the true mean lies in
	// the domain, so the intersection covers it whenever the t-interval does, and the level
	// is kept.
	IntervalClipped = "t-clipped"
)

// SummarizeIn is Summarize for a metric whose values lie in d: its interval is Student's
// t-interval, clipped to d where it leaves it (Summary.Interval says so), so that it never
// contains impossible values. The percentile bootstrap of the mean, which stood in for
// skewed samples of 10 or more and for intervals leaving the domain, never covered better
// than t in simulation (exponential, lognormal CV 20 % and 80 %, bimodal; n = 3 to 30:
// t 0.914 against 0.903 for exponential samples of 10, 0.893 against 0.880 for lognormal
// CV 80 %), so it is gone.
func SummarizeIn(xs []float64, d Domain) Summary {
	s := Summarize(xs)
	if s.N < 2 || s.StdDev == 0 || math.IsNaN(s.CILow) {
		return s
	}
	if s.CILow >= d.Lo && s.CIHigh <= d.Hi {
		return s
	}
	s.CILow, s.CIHigh = math.Max(s.CILow, d.Lo), math.Min(s.CIHigh, d.Hi)
	s.Interval = IntervalClipped
	s.RelCI = (s.CIHigh - s.CILow) / 2 / math.Abs(s.Mean)
	return s
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
