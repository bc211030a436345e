package stats

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Verdicts a Comparison can carry, always from B's point of view.
const (
	VerdictBetter = "better"
	VerdictWorse  = "worse"
	VerdictNone   = "no significant difference"
	// VerdictUntestable is the verdict where the rank test cannot reach Alpha at these
	// sample sizes whatever the data (3 against 3 cannot go below p = 0.1): the data were
	// not allowed to tell, which is not the same as "no difference".
	VerdictUntestable = "untestable"
)

// Defaults applied by Compare to zero-valued CompareOptions fields.
const (
	DefaultResamples = 10000
	DefaultAlpha     = 0.05
)

// pcgStream is the fixed second PCG seed word. Only Seed is exposed: one
// number is what a user can write in a report to reproduce an interval.
const pcgStream = 0x636e6962656e6368 // "cnibench"

// CompareOptions tunes Compare. The zero value is ready to use.
type CompareOptions struct {
	// Resamples is the number of bootstrap resamples; 0 means
	// DefaultResamples. 10000 keeps the Monte Carlo error of the 2.5 %/97.5 %
	// percentiles around 3 % of the bootstrap standard error.
	Resamples int
	// Seed seeds the PCG generator behind the bootstrap, so the same data
	// and Seed give bit-identical intervals on every run and platform.
	Seed int64
	// Alpha is the significance level; 0 means DefaultAlpha. The ratio
	// interval is a (1-Alpha) interval so that the two halves of the
	// verdict use the same level (95 % with the default).
	Alpha float64
}

// Comparison is the outcome of comparing configuration B against baseline A.
type Comparison struct {
	// Ratio is mean(B)/mean(A); RatioLow and RatioHigh bound its (1-Alpha)
	// confidence interval (95 % by default): Welch's interval for the
	// difference of the logs of the means (delta method, Welch-Satterthwaite
	// degrees of freedom), mapped back by exp, so that it is never negative
	// and covers what it says already at 3 runs a side (the percentile
	// bootstrap covered 0.79 there, 0.87 at 5; see TestRatioIntervalCoverage).
	// Where a mean is 0 the log does not exist and the percentile bootstrap
	// stands in.
	Ratio, RatioLow, RatioHigh float64
	// MDE is the minimum detectable effect: the smallest relative difference of
	// the means (0.04: 4 %) this comparison would call four times in five at
	// its noise and sample sizes, from the log-ratio interval's standard error
	// and degrees of freedom, (t(1-Alpha/2) + t(0.8))·se, as exp(that) - 1. NaN
	// where the interval could not be formed on the log scale; +Inf where the
	// rank test cannot reach Alpha at these sample sizes.
	MDE float64
	// MinP is the smallest two-sided p-value the exact rank test can give at
	// these sample sizes, whatever the values: 2/C(nA+nB, nA). At or above
	// Alpha the comparison is untestable.
	MinP float64
	// PValue is the two-sided Mann-Whitney U p-value, as
	// scipy.stats.mannwhitneyu(b, a, alternative='two-sided') with SciPy's
	// default method='auto' (exact null distribution when the smaller group
	// has ≤ 8 values and no value is tied, otherwise the normal
	// approximation with tie and continuity corrections), except that tied
	// samples small enough to enumerate (at most 50000 splits) get the exact
	// permutation distribution of their midranks.
	PValue float64
	// U is the Mann-Whitney statistic for B (SciPy's returned statistic
	// for x = b): pairs with b > a plus half the ties. U/(nA·nB) is the
	// probability that a random B run beats a random A run numerically.
	U float64
	// Exact reports whether PValue comes from the exact U distribution.
	Exact bool
	// Paired reports a comparison paired by block (CompareBlocked): PValue and the interval
	// come from the paired t on the per-block log ratios, and U is NaN.
	Paired bool
	// Points reports a comparison on the difference scale (ComparePoints): Diff is
	// mean(B) - mean(A) in the metric's units with its (1-Alpha) interval [DiffLow,
	// DiffHigh], and MDE is in those units too.
	Points                  bool
	Diff, DiffLow, DiffHigh float64
	// Verdict is VerdictBetter, VerdictWorse or VerdictNone from B's point
	// of view.
	Verdict string
}

// Compare compares sample b (candidate) against sample a (baseline).
// higherIsBetter says which direction of the metric is an improvement
// (true for throughput, false for latency or CPU).
//
// The verdict is "better" or "worse" only when BOTH the Mann-Whitney test
// is significant (p < Alpha) AND the ratio interval excludes 1, in the
// same direction as U. Either signal alone is too easy to fool with small
// noisy samples: the percentile bootstrap is known to under-cover for
// n < ~20 (it cannot see variability that the few runs did not sample), so
// its interval alone calls too many differences; the rank test alone
// reacts to any shift in ordering, even one whose effect on the mean is
// negligible or opposite (one 2x run can move the mean against the ranks).
// Requiring both also guarantees a reader never sees "better" next to an
// interval that contains 1.0. The price is some power. Independently of
// that, the exact rank test has a floor: with Alpha = 0.05 equal groups
// need at least 4 runs each (3 vs 3 cannot go below p = 0.1; 4 vs 4
// reaches 0.029), so fewer runs always yield VerdictNone.
//
// NaN values are skipped (see the package documentation). An error is
// returned when either group has fewer than 2 values, when any value is
// infinite or negative (a ratio of means is only meaningful for
// non-negative, ratio-scale metrics), when a's mean is 0, or when opts is
// out of range. Inputs are not modified.
func Compare(a, b []float64, higherIsBetter bool, opts CompareOptions) (Comparison, error) {
	if opts.Resamples == 0 {
		opts.Resamples = DefaultResamples
	}
	if opts.Alpha == 0 {
		opts.Alpha = DefaultAlpha
	}
	if opts.Resamples < 0 {
		return Comparison{}, fmt.Errorf("stats: Resamples must be positive, got %d", opts.Resamples)
	}
	if !(opts.Alpha > 0 && opts.Alpha < 1) {
		return Comparison{}, fmt.Errorf("stats: Alpha must be in (0, 1), got %v", opts.Alpha)
	}
	a, err := compareInput("a", a)
	if err != nil {
		return Comparison{}, err
	}
	b, err = compareInput("b", b)
	if err != nil {
		return Comparison{}, err
	}
	meanA, meanB := stat.Mean(a, nil), stat.Mean(b, nil)
	if meanA == 0 {
		return Comparison{}, errors.New("stats: mean of a is 0, ratio undefined")
	}

	c := Comparison{Ratio: meanB / meanA, MinP: MinAttainableP(len(a), len(b))}
	lr, ok := logRatio(a, b)
	if ok {
		c.RatioLow, c.RatioHigh = lr.interval(opts.Alpha)
		c.MDE = lr.detectable(opts.Alpha)
	} else {
		c.RatioLow, c.RatioHigh = bootstrapRatioCI(a, b, opts)
		c.MDE = math.NaN()
	}
	if c.MinP >= opts.Alpha {
		c.MDE = math.Inf(1)
	}

	m := mannWhitneyU(b, a)
	c.PValue, c.U, c.Exact = m.p, m.u, m.exact
	if c.MinP >= opts.Alpha {
		c.Verdict = VerdictUntestable
		return c, nil
	}

	half := float64(len(a)) * float64(len(b)) / 2
	significant := c.PValue < opts.Alpha
	c.Verdict = verdictOf(significant && c.RatioLow > 1 && c.U > half, significant && c.RatioHigh < 1 && c.U < half, higherIsBetter)
	return c, nil
}

// verdictOf turns "B is significantly higher" or "lower" into a verdict from B's point of view.
func verdictOf(bHigher, bLower, higherIsBetter bool) string {
	switch {
	case !bHigher && !bLower:
		return VerdictNone
	case bHigher == higherIsBetter:
		return VerdictBetter
	}
	return VerdictWorse
}

// MinAttainableP is the smallest two-sided p-value of the exact Mann-Whitney test with na and
// nb values, reached when every value of one group exceeds every value of the other:
// 2/C(na+nb, na) (capped at 1). 2 against 2 gives 0.333, 3 against 3 0.1, 4 against 4 0.029.
func MinAttainableP(na, nb int) float64 {
	if na < 1 || nb < 1 {
		return 1
	}
	return math.Min(1, 2/binomial(na+nb, na))
}

// logRatioEstimate is the log of a ratio of means with the standard error of its delta-method
// estimate and Welch-Satterthwaite degrees of freedom.
type logRatioEstimate struct {
	ratio, se, df float64
}

// logRatio estimates log(mean(b)) - log(mean(a)): the variance of each log mean is s²/(n·mean²)
// (delta method). ok is false where a mean is 0 and the log does not exist.
func logRatio(a, b []float64) (logRatioEstimate, bool) {
	ma, mb := stat.Mean(a, nil), stat.Mean(b, nil)
	if ma <= 0 || mb <= 0 {
		return logRatioEstimate{}, false
	}
	na, nb := float64(len(a)), float64(len(b))
	va := stat.Variance(a, nil) / (na * ma * ma)
	vb := stat.Variance(b, nil) / (nb * mb * mb)
	e := logRatioEstimate{ratio: mb / ma, se: math.Sqrt(va + vb)}
	if va+vb > 0 {
		e.df = (va + vb) * (va + vb) / (va*va/(na-1) + vb*vb/(nb-1))
	}
	return e, true
}

// interval is the (1-alpha) Welch interval of the log ratio mapped back to a ratio of means;
// two groups without spread give the point ratio.
func (e logRatioEstimate) interval(alpha float64) (lo, hi float64) {
	if e.se == 0 {
		return e.ratio, e.ratio
	}
	half := e.quantile(1-alpha/2) * e.se
	return e.ratio * math.Exp(-half), e.ratio * math.Exp(half)
}

// detectable is the relative difference called with 80 % power at level alpha.
func (e logRatioEstimate) detectable(alpha float64) float64 {
	if e.se == 0 {
		return 0
	}
	return math.Expm1((e.quantile(1-alpha/2) + e.quantile(0.8)) * e.se)
}

func (e logRatioEstimate) quantile(p float64) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: e.df}.Quantile(p)
}

// compareInput copies xs without NaNs and validates it for Compare.
func compareInput(name string, xs []float64) ([]float64, error) {
	out := withoutNaN(xs)
	for _, x := range out {
		if math.IsInf(x, 0) || x < 0 {
			return nil, fmt.Errorf("stats: %s contains %v; Compare needs finite non-negative values", name, x)
		}
	}
	if len(out) < 2 {
		return nil, fmt.Errorf("stats: %s has %d non-NaN values, need at least 2", name, len(out))
	}
	return out, nil
}

// bootstrapRatioCI returns the percentile-bootstrap (1-Alpha) interval of
// mean(b)/mean(a), resampling a and b independently with replacement
// (SciPy's paired=False), Resamples times.
//
// The percentiles use linear interpolation (type 7), as scipy.stats.bootstrap
// does through scipy.stats.quantile. The random stream is not SciPy's
// (NumPy's PCG64 plus Generator.integers versus Go's PCG plus the bounded
// draw below), so results agree with SciPy only to Monte Carlo error.
func bootstrapRatioCI(a, b []float64, opts CompareOptions) (lo, hi float64) {
	src := rand.NewPCG(uint64(opts.Seed), pcgStream)
	ratios := make([]float64, opts.Resamples)
	na, nb := uint64(len(a)), uint64(len(b))
	for r := range ratios {
		var sa, sb float64
		for range na {
			sa += a[boundedDraw(src, na)]
		}
		for range nb {
			sb += b[boundedDraw(src, nb)]
		}
		ratios[r] = safeRatio(sb/float64(nb), sa/float64(na))
	}
	slices.Sort(ratios)
	return quantileSorted(ratios, opts.Alpha/2), quantileSorted(ratios, 1-opts.Alpha/2)
}

// safeRatio divides non-negative means. A resample of a may consist only of
// zeros (possible when a contains zeros); x/0 is then +Inf, which sorts
// correctly, and 0/0 is defined as 1 because two all-zero resamples show
// no difference. Keeping NaN out of the slice keeps the sort well defined.
func safeRatio(num, den float64) float64 {
	if den == 0 && num == 0 {
		return 1
	}
	return num / den
}

// boundedDraw returns a uniform integer in [0, n) using Lemire's
// multiply-and-reject method on the raw PCG output. It is written out
// rather than using rand.Rand.IntN because math/rand/v2 does not promise
// that Rand's derivation of bounded values stays the same across Go
// releases, whereas PCG's output stream is fixed by its definition; this
// keeps a recorded Seed reproducible after toolchain upgrades.
func boundedDraw(src *rand.PCG, n uint64) uint64 {
	hi, lo := bits.Mul64(src.Uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(src.Uint64(), n)
		}
	}
	return hi
}
