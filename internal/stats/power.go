package stats

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// DefaultPower is the probability with which a detectable effect is caught: the "four times
// in five" of every "could detect" figure.
const DefaultPower = 0.8

// MarginTest is the one-sided t test of "the true shift exceeds margin" against "it is at most
// margin", on an estimate's own scale: the p-value is P(T_df >= (Center-margin)/SE). A gate
// that accepts shifts up to a tolerance asks exactly this, so a true shift equal to the margin
// is called with probability alpha at most, whatever n. NaN where the estimate has none.
func MarginTest(e Estimate, margin float64) float64 {
	switch {
	case math.IsNaN(e.Center) || math.IsNaN(e.SE) || e.DF <= 0 && e.SE > 0:
		return math.NaN()
	case e.SE == 0:
		if e.Center > margin {
			return 0
		}
		return 1
	}
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: e.DF}.Survival((e.Center - margin) / e.SE)
}

// PowerT is the probability that a one-sided t test with df degrees of freedom at level alpha
// rejects when the true shift is ncp standard errors beyond its margin: P(T'(df, ncp) > t(1-alpha)),
// from the noncentral t distribution, exact for normal noise where the plug-in normal
// approximation (t(1-alpha) + z(power)) overstates the power at few degrees of freedom.
func PowerT(df, ncp, alpha float64) float64 {
	return powerAbove(df, ncp, distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(1-alpha))
}

// powerAbove is P(T'(df, ncp) > crit).
func powerAbove(df, ncp, crit float64) float64 {
	return 1 - distuv.NoncentralT{Nu: df, Mu: ncp}.CDF(crit)
}

// DetectableNCP is the shift, in standard errors beyond the margin, that a one-sided t test
// with df degrees of freedom at level alpha catches with the given power (noncentral t). It
// starts from the normal approximation t(1-alpha) + z(power), which is close, and refines it by
// the secant method, bisecting where a step would leave the bracket (the power increases with
// the shift). +Inf where df is not positive.
func DetectableNCP(df, alpha, power float64) float64 {
	if !(df > 0) {
		return math.Inf(1)
	}
	crit := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(1 - alpha)
	f := func(ncp float64) float64 { return powerAbove(df, ncp, crit) - power }
	x0 := crit + distuv.UnitNormal.Quantile(power)
	lo, hi := 0.0, x0
	for f(hi) < 0 {
		lo, hi = hi, hi*2
		if hi > 1e6 {
			return math.Inf(1)
		}
	}
	x1, f1 := hi, f(hi)
	x, fx := (lo+hi)/2, f((lo+hi)/2)
	for range 100 {
		if fx < 0 {
			lo = x
		} else {
			hi = x
		}
		if math.Abs(fx) < 1e-9 || hi-lo < 1e-9*hi {
			return x
		}
		next := x - fx*(x-x1)/(fx-f1)
		if !(next > lo && next < hi) || fx == f1 {
			next = (lo + hi) / 2
		}
		x1, f1 = x, fx
		x, fx = next, f(next)
	}
	return x
}

// Detectable is the smallest true shift beyond margin, on the estimate's scale, that a
// one-sided test of e at level alpha would catch with the given power: DetectableNCP·SE. It
// treats the estimate's standard error as known, as every post-hoc "could detect" does. NaN
// where e has no standard error.
func Detectable(e Estimate, alpha, power float64) float64 {
	if math.IsNaN(e.SE) {
		return math.NaN()
	}
	if e.SE == 0 {
		return 0
	}
	return DetectableNCP(e.DF, alpha, power) * e.SE
}

// RoundsFor is the fewest blocks (rounds, or runs a side) with which a one-sided test at level
// alpha catches a shift of size beyond margin with the given power, where unit is the standard
// deviation of one block's value on the tested scale (for a paired ratio, SE·sqrt(n) of its
// log-scale estimate)
// and the test has n-1 degrees of freedom at n blocks (dfPerBlock 1; an unpaired comparison of
// n a side has about 2n-2: dfPerBlock 2). 0 where no number up to limit will do.
func RoundsFor(unit, shift float64, dfPerBlock float64, alpha, power float64, limit int) int {
	if !(shift > 0) || math.IsNaN(unit) {
		return 0
	}
	if unit == 0 {
		return MinPairedBlocks
	}
	for n := MinPairedBlocks; n <= limit; n++ {
		df := dfPerBlock*float64(n) - dfPerBlock
		if DetectableNCP(df, alpha, power)*unit/math.Sqrt(float64(n)) <= shift {
			return n
		}
	}
	return 0
}
