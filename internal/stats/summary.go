package stats

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// ciLevel is the confidence level of Summary's interval of the mean. It is a
// constant rather than a parameter because every figure cnibench prints must
// be comparable with every other one.
const ciLevel = 0.95

// trimProportion is the fraction cut from each end for TrimmedMean. 20 % is
// the usual choice for small, heavy-tailed samples: with n = 5 it drops the
// single best and worst run, which is exactly the robustness we want when
// one run in five hits a noisy neighbour.
const trimProportion = 0.2

// tukeyK is the Tukey fence multiplier (1.5 IQR, the "inner fence").
const tukeyK = 1.5

// Summary describes one sample of measurements (one metric of one
// configuration). All statistics are computed over the non-NaN values.
type Summary struct {
	// N is the number of values used, i.e. the input length minus NaNs.
	N int
	// Mean is the arithmetic mean; Median is the middle value (mean of the
	// two middle values for even N, as numpy.median).
	Mean, Median float64
	// StdDev is the sample standard deviation (divisor N-1, numpy ddof=1).
	// It is NaN for N < 2.
	StdDev float64
	// Min and Max are the extreme values.
	Min, Max float64
	// CILow and CIHigh bound the 95 % confidence interval of the mean,
	// Mean ± t(0.975, N-1)·StdDev/√N, as
	// scipy.stats.t.interval(0.95, N-1, loc=mean, scale=scipy.stats.sem(x)).
	// Both are NaN for N < 2. When all values are equal the interval
	// collapses to [Mean, Mean].
	CILow, CIHigh float64
	// TrimmedMean is the 20 % trimmed mean with scipy.stats.trim_mean(x, 0.2)
	// semantics: floor(0.2·N) values are cut from each end of the sorted
	// sample before averaging (so nothing is cut for N < 5).
	TrimmedMean float64
	// Outliers holds the indices, into the slice passed to Summarize
	// (NaN positions included, so indices line up with the caller's runs),
	// of values outside the Tukey fences [Q1-1.5·IQR, Q3+1.5·IQR], with
	// quartiles computed as numpy.percentile's default linear interpolation.
	// Indices are ascending; the slice is empty, never nil, when nothing is
	// flagged, so it serialises as [] rather than null. Outliers are
	// reported, never removed from the other statistics.
	Outliers []int
	// RelCI is the half-width of the confidence interval relative to the
	// mean, (CIHigh-CILow)/2/|Mean|, e.g. 0.05 means "±5 %". It answers
	// "do we have enough runs?". The absolute value of the mean is used so
	// the figure stays a non-negative width for negative-valued metrics;
	// for the positive metrics cnibench measures it equals the plain ratio.
	// NaN for N < 2 or when both mean and width are zero; +Inf when only
	// the mean is zero.
	RelCI float64
	// Interval names the method of [CILow, CIHigh]: IntervalT here, another method where
	// SummarizeIn had to keep the interval within the metric's domain; empty for N < 2.
	Interval string
	// Bimodal flags a sample that falls into two separate groups (see bimodal): its mean
	// describes neither.
	Bimodal bool
}

// Summarize computes a Summary of xs. NaN values are skipped (see the
// package documentation); xs itself is never modified. For an empty (or
// all-NaN) input every float field is NaN and N is 0; for N = 1 the
// location fields equal the single value and the spread/interval fields
// are NaN.
func Summarize(xs []float64) Summary {
	sorted := withoutNaN(xs)
	n := len(sorted)
	s := Summary{
		N:        n,
		Outliers: []int{},
		StdDev:   math.NaN(),
		CILow:    math.NaN(),
		CIHigh:   math.NaN(),
		RelCI:    math.NaN(),
	}
	if n == 0 {
		s.Mean, s.Median, s.Min, s.Max, s.TrimmedMean = math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()
		return s
	}
	slices.Sort(sorted)

	s.Mean = stat.Mean(sorted, nil)
	s.Median = quantileSorted(sorted, 0.5)
	s.Min, s.Max = sorted[0], sorted[n-1]
	s.TrimmedMean = trimmedMeanSorted(sorted, trimProportion)

	q1, q3 := quantileSorted(sorted, 0.25), quantileSorted(sorted, 0.75)
	iqr := q3 - q1
	lowFence, highFence := q1-tukeyK*iqr, q3+tukeyK*iqr
	for i, x := range xs {
		// NaN compares false both ways, so skipped values are never flagged.
		if x < lowFence || x > highFence {
			s.Outliers = append(s.Outliers, i)
		}
	}

	s.Bimodal = bimodal(sorted)
	if n < 2 {
		return s
	}
	s.Interval = IntervalT
	// gonum's StdDev is the corrected two-pass (n-1) estimator, numerically
	// safer than sum-of-squares for values like 1e9 ± 1e3 (bytes/s).
	s.StdDev = stat.StdDev(sorted, nil)
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 1)}.Quantile(1 - (1-ciLevel)/2)
	half := t * s.StdDev / math.Sqrt(float64(n))
	s.CILow, s.CIHigh = s.Mean-half, s.Mean+half
	s.RelCI = half / math.Abs(s.Mean)
	return s
}

// MedianCI returns a distribution-free confidence interval of the median at
// the given level (e.g. 0.95), built from order statistics: with K ~
// Binomial(n, 1/2) the interval [x(k), x(n+1-k)] (1-based order statistics)
// covers the population median with probability 1 - 2·P(K ≤ k-1). The
// largest k whose coverage is still ≥ level is used, so the true coverage is
// at least level (conservative; the exact level is generally unattainable
// with discrete order statistics). This is the interval
// scipy.stats.quantile_test(x, p=0.5).confidence_interval(level) returns,
// except when level is exactly an attainable coverage such as
// 1-2·2^-5 = 0.9375 for n = 5: SciPy's floating-point comparisons then
// return lopsided results (NaN low with high = max, or [x(1), x(9)] for
// n = 10 at level 0.978515625), whereas MedianCI returns the symmetric
// interval whose coverage equals level.
//
// ok is false, and lo and hi are NaN, when even [min, max] has coverage
// below level (for 0.95 that means n < 6) or level is not in (0, 1). NaN
// values are skipped; xs is not modified.
func MedianCI(xs []float64, level float64) (lo, hi float64, ok bool) {
	nan := math.NaN()
	if !(level > 0 && level < 1) {
		return nan, nan, false
	}
	sorted := withoutNaN(xs)
	n := len(sorted)
	if n == 0 {
		return nan, nan, false
	}
	tail := (1 - level) / 2
	bin := distuv.Binomial{N: float64(n), P: 0.5}
	// k is the 1-based rank of the lower bound; find the largest k with
	// P(K <= k-1) <= tail. P(K <= 0) = 2^-n is the smallest attainable tail.
	// The 1e-12 relative slack absorbs rounding in (1-level)/2 and in
	// gonum's incomplete-beta CDF, so a level that equals an attainable
	// coverage exactly is treated as met rather than missed by one ulp.
	k := 0
	for j := 1; j <= (n+1)/2; j++ {
		if bin.CDF(float64(j-1)) <= tail*(1+1e-12) {
			k = j
		} else {
			break
		}
	}
	if k == 0 {
		return nan, nan, false
	}
	slices.Sort(sorted)
	return sorted[k-1], sorted[n-k], true
}

// withoutNaN returns a fresh copy of xs without NaNs. Copying is what
// guarantees callers that their slice (often run results in run order) is
// never reordered by the sorts done here.
func withoutNaN(xs []float64) []float64 {
	out := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) {
			out = append(out, x)
		}
	}
	return out
}

// quantileSorted returns the p-quantile of an ascending, non-empty sample
// using linear interpolation between closest ranks (Hyndman & Fan type 7),
// numpy.percentile's and scipy.stats.quantile's default. gonum's
// stat.Quantile is not used because its LinInterp is a different
// definition (type 4) and would not reproduce numpy's quartiles.
func quantileSorted(sorted []float64, p float64) float64 {
	n := len(sorted)
	h := p * float64(n-1)
	i := int(math.Floor(h))
	if i >= n-1 {
		return sorted[n-1]
	}
	frac := h - float64(i)
	lo, hi := sorted[i], sorted[i+1]
	// Checking equality first keeps ±Inf neighbours from producing
	// Inf-Inf = NaN; the bootstrap can legitimately produce +Inf ratios.
	if frac == 0 || lo == hi {
		return lo
	}
	// numpy's _lerp interpolates from the nearer end for accuracy; do the
	// same so results agree to the last bit more often.
	if frac >= 0.5 {
		return hi - (hi-lo)*(1-frac)
	}
	return lo + (hi-lo)*frac
}

// trimmedMeanSorted mirrors scipy.stats.trim_mean: cut int(prop·n) values
// from each end (the same float computation as SciPy, so the rounding of
// e.g. 0.2·15 = 3.0000000000000004 matches) and average the rest.
func trimmedMeanSorted(sorted []float64, prop float64) float64 {
	n := len(sorted)
	cut := int(prop * float64(n))
	if cut >= n-cut {
		// Unreachable for prop = 0.2; kept so a future proportion ≥ 0.5
		// degrades to the median instead of averaging an empty slice.
		return quantileSorted(sorted, 0.5)
	}
	return stat.Mean(sorted[cut:n-cut], nil)
}
