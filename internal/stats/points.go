package stats

import (
	"errors"
	"math"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// ComparePoints compares b against a on the difference of their means, in the metric's own
// units: the scale for a percentage of a whole that is often 0, such as UDP loss, where a
// ratio does not exist (0 against 0.4 %) or says nothing (0.01 % against 0.1 % is x10 and no
// practical difference). It pairs by block where CompareBlocked would, on the complete blocks
// (the one-sample t on the per-block differences, n-1 degrees of freedom; the incomplete
// blocks counted in DroppedBlocks), and is Welch's t on the two samples otherwise. The interval and the test are the same t statistic, so a verdict never sits
// beside an interval that holds 0.
//
// The result has Points set, the difference of the means and its (1-Alpha) interval in Diff,
// DiffLow and DiffHigh, and as MDE the smallest difference, in the metric's units, called four
// times in five at this noise and n. Ratio is mean(b)/mean(a) where mean(a) > 0 (else NaN);
// the ratio interval and U are NaN; MinP is 0 (a t-test has no floor).
func ComparePoints(a, b []Obs, higherIsBetter bool, pairing Pairing, opts CompareOptions) (Comparison, error) {
	if opts.Alpha == 0 {
		opts.Alpha = DefaultAlpha
	}
	if !(opts.Alpha > 0 && opts.Alpha < 1) {
		return Comparison{}, errors.New("stats: Alpha must be in (0, 1)")
	}
	var e diffEstimate
	p, ok := pairByBlock(a, b)
	if ok && pairing == PairAuto {
		e = pairedDiff(p.a, p.b)
	} else {
		va, err := pointsInput("a", Values(a))
		if err != nil {
			return Comparison{}, err
		}
		vb, err := pointsInput("b", Values(b))
		if err != nil {
			return Comparison{}, err
		}
		e = welchDiff(va, vb)
	}
	c := Comparison{Points: true, Paired: e.paired, Diff: e.diff, Ratio: math.NaN(), RatioLow: math.NaN(), RatioHigh: math.NaN(), U: math.NaN(), PValue: 1,
		NA: e.na, NB: e.nb, Est: Estimate{Center: e.diff, SE: e.se, DF: e.df}, det: detectBasis{se: e.se, df: e.df}}
	if e.paired {
		c.DroppedBlocks = p.dropped
	}
	if e.meanA > 0 {
		c.Ratio = e.meanB / e.meanA
	}
	c.DiffLow, c.DiffHigh, c.MDE = e.diff, e.diff, 0
	switch {
	case e.se > 0:
		t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: e.df}
		half := t.Quantile(1-opts.Alpha/2) * e.se
		c.DiffLow, c.DiffHigh = e.diff-half, e.diff+half
		c.MDE = c.DetectableAt(opts.Alpha)
		c.PValue = 2 * t.Survival(math.Abs(e.diff)/e.se)
	case e.diff != 0:
		c.PValue = 0 // every block, or every value, moved by the same amount
	}
	significant := c.PValue < opts.Alpha
	c.Verdict = verdictOf(significant && c.DiffLow > 0, significant && c.DiffHigh < 0, higherIsBetter)
	return c, nil
}

// diffEstimate is a difference of means with its standard error and degrees of freedom.
type diffEstimate struct {
	diff, se, df, meanA, meanB float64
	na, nb                     int
	paired                     bool
}

// pairedDiff is the mean of the per-block differences b_i - a_i and its standard error.
func pairedDiff(a, b []float64) diffEstimate {
	d := make([]float64, len(a))
	for i := range a {
		d[i] = b[i] - a[i]
	}
	mean, sd := stat.MeanStdDev(d, nil)
	return diffEstimate{diff: mean, se: sd / math.Sqrt(float64(len(d))), df: float64(len(d) - 1),
		meanA: stat.Mean(a, nil), meanB: stat.Mean(b, nil), na: len(a), nb: len(b), paired: true}
}

// welchDiff is mean(b) - mean(a) with Welch's standard error and Welch-Satterthwaite degrees
// of freedom.
func welchDiff(a, b []float64) diffEstimate {
	na, nb := float64(len(a)), float64(len(b))
	ma, mb := stat.Mean(a, nil), stat.Mean(b, nil)
	va, vb := stat.Variance(a, nil)/na, stat.Variance(b, nil)/nb
	e := diffEstimate{diff: mb - ma, se: math.Sqrt(va + vb), meanA: ma, meanB: mb, na: len(a), nb: len(b)}
	if va+vb > 0 {
		e.df = (va + vb) * (va + vb) / (va*va/(na-1) + vb*vb/(nb-1))
	}
	return e
}

// pointsInput copies xs without NaNs and checks it for ComparePoints: finite, at least 2.
func pointsInput(name string, xs []float64) ([]float64, error) {
	out := withoutNaN(xs)
	for _, x := range out {
		if math.IsInf(x, 0) {
			return nil, errors.New("stats: " + name + " contains an infinite value")
		}
	}
	if len(out) < 2 {
		return nil, errors.New("stats: " + name + " has fewer than 2 non-NaN values")
	}
	return out, nil
}
