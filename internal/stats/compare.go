package stats

import (
	"errors"
	"fmt"
	"math"

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
	// DefaultResamples is kept for callers that still record it: no interval is resampled
	// any more (see CompareOptions.Resamples).
	DefaultResamples = 10000
	DefaultAlpha     = 0.05
)

// CompareOptions tunes Compare. The zero value is ready to use.
type CompareOptions struct {
	// Resamples and Seed configured the percentile bootstrap that stood in for the interval
	// where B's mean was 0. That bootstrap resampled all-zero values into the degenerate
	// [0, 0] (or [0, 1] where A held zeros too), so it is gone, and every figure is now a
	// deterministic function of the data; both fields are ignored.
	Resamples int
	Seed      int64
	// Alpha is the significance level; 0 means DefaultAlpha. The ratio
	// interval is a (1-Alpha) interval so that the two halves of the
	// verdict use the same level (95 % with the default).
	Alpha float64
}

// Comparison is the outcome of comparing configuration B against baseline A.
type Comparison struct {
	// Ratio is mean(B)/mean(A), the ratio of the means, in every comparison, paired or not
	// (CompareBlocked); RatioLow and RatioHigh bound its (1-Alpha) confidence interval (95 %
	// by default). Unpaired it is Welch's interval for the difference of the logs of the
	// means (delta method, Welch-Satterthwaite degrees of freedom), mapped back by exp, so
	// that it is never negative and covers what it says already at 3 runs a side (the
	// percentile bootstrap covered 0.79 there, 0.87 at 5; see TestRatioIntervalCoverage);
	// paired it is Fieller's (CompareBlocked). Where B's mean is 0 the ratio is 0 and so are
	// both ends: all of B is 0, and nothing in the data says otherwise.
	Ratio, RatioLow, RatioHigh float64
	// MDE is the minimum detectable effect: the smallest relative difference of the means
	// (0.04: 4 %) this comparison's verdict would call four times in five at its noise and
	// sample sizes, at level Alpha (DetectableAt, which gives it at any level). NaN where the
	// comparison has no standard error (B's mean 0); +Inf where the rank test cannot reach
	// Alpha at these sample sizes.
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
	// samples small enough to enumerate (at most 50000 splits) get an exact
	// permutation test on their midranks (see mannWhitneyU for its two-sided rule).
	PValue float64
	// U is the Mann-Whitney statistic for B (SciPy's returned statistic
	// for x = b): pairs with b > a plus half the ties. U/(nA·nB) is the
	// probability that a random B run beats a random A run numerically.
	U float64
	// Exact reports whether PValue comes from the exact U distribution.
	Exact bool
	// Paired reports a comparison paired by block (CompareBlocked): PValue is the paired t's
	// on the per-block differences, the interval Fieller's, and U is NaN. DroppedBlocks is the
	// number of blocks it left out for not holding exactly one value of each side.
	Paired        bool
	DroppedBlocks int
	// NA and NB are the values of each side the comparison used: paired, the complete blocks.
	NA, NB int
	// Points reports a comparison on the difference scale (ComparePoints): Diff is
	// mean(B) - mean(A) in the metric's units with its (1-Alpha) interval [DiffLow,
	// DiffHigh], and MDE is in those units too.
	Points                  bool
	Diff, DiffLow, DiffHigh float64
	// Verdict is VerdictBetter, VerdictWorse or VerdictNone from B's point
	// of view.
	Verdict string
	// Est is the estimate with its standard error and degrees of freedom: the log of the
	// ratio of means for a ratio (unpaired: Welch's delta method, the interval's own; paired:
	// the delta method on the per-block values, n-1 degrees of freedom), the difference in the
	// metric's units for Points. A gate tests it against a margin (MarginTest; a paired
	// ratio through Margin instead); its SE is NaN where no t interval was formed (a mean of 0).
	Est Estimate
	// det is what DetectableAt computes the detectable difference from.
	det detectBasis
	// Margin tests a paired ratio against any margin (zero for an unpaired comparison).
	Margin RatioTest
}

// Estimate is an estimate with its standard error and degrees of freedom, from which a t test
// against any margin and its power follow.
type Estimate struct {
	Center, SE, DF float64
}

// noEstimate marks a comparison without a t estimate.
func noEstimate() Estimate { return Estimate{Center: math.NaN(), SE: math.NaN(), DF: math.NaN()} }

// Compare compares sample b (candidate) against sample a (baseline).
// higherIsBetter says which direction of the metric is an improvement
// (true for throughput, false for latency or CPU).
//
// The verdict is "better" or "worse" only when BOTH the Mann-Whitney test
// is significant (p < Alpha) AND the ratio interval excludes 1, in the
// same direction as U. The rank test alone reacts to any shift in ordering,
// even one whose effect on the mean is negligible or opposite (one 2x run can
// move the mean against the ranks); requiring the interval too guarantees a
// reader never sees "better" next to an interval that contains 1.0, and the
// rank test keeps the verdict honest where a few runs make the interval's
// normal approximation doubtful. The price is some power, which MDE
// counts (DetectableAt). Independently of
// that, the exact rank test has a floor: with Alpha = 0.05 equal groups
// need at least 4 runs each (3 vs 3 cannot go below p = 0.1; 4 vs 4
// reaches 0.029), so fewer runs always yield VerdictUntestable.
//
// NaN values are skipped (see the package documentation). An error is
// returned when either group has fewer than 2 values, when any value is
// infinite or negative (a ratio of means is only meaningful for
// non-negative, ratio-scale metrics), when a's mean is 0, or when opts is
// out of range. Inputs are not modified.
func Compare(a, b []float64, higherIsBetter bool, opts CompareOptions) (Comparison, error) {
	if opts.Alpha == 0 {
		opts.Alpha = DefaultAlpha
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

	c := Comparison{Ratio: meanB / meanA, MinP: MinAttainableP(len(a), len(b)), NA: len(a), NB: len(b), Est: noEstimate(),
		det: detectBasis{se: math.NaN(), rank: true, na: len(a), nb: len(b)}}
	// Where B's mean is 0 there is no log, and the interval is the point ratio 0: all of B
	// is 0.
	if lr, ok := logRatio(a, b); ok {
		c.Est = Estimate{Center: math.Log(lr.ratio), SE: lr.se, DF: lr.df}
		c.det.se, c.det.df, c.det.log = lr.se, lr.df, true
		c.RatioLow, c.RatioHigh = lr.interval(opts.Alpha)
	}
	c.MDE = c.DetectableAt(opts.Alpha)

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
