package changepoint

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// tStats is the outcome of the t-test between two adjacent segments.
type tStats struct {
	meanL, meanR float64
	p            float64
}

// studentT is the two-sided Student t-test (pooled variance) between two
// adjacent segments, the test of Otava's TTestSignificanceTester. Otava
// feeds scipy the population standard deviation (divisor n, numpy's
// default) where scipy expects the sample one; that shrinks the variance of
// short segments (by 1/3 for three points) and, with the split-level
// correction, lets the false-alarm rate of 10-run series reach 7 %. So the
// sample variance is used unless otavaVar asks for Otava's, which only the
// cross-check does. A one-point segment has no spread, and two points in
// all give p = 1, as in Otava.
func studentT(left, right []float64, otavaVar bool) tStats {
	nl, nr := float64(len(left)), float64(len(right))
	ml, mr := mean(left), mean(right)
	st := tStats{meanL: ml, meanR: mr, p: 1}
	if len(left)+len(right) <= 2 {
		return st
	}
	dl, dr := max(nl-1, 1), max(nr-1, 1)
	if otavaVar {
		dl, dr = nl, nr
	}
	vl, vr := sumSq(left, ml)/dl, sumSq(right, mr)/dr
	df := nl + nr - 2
	pooled := ((nl-1)*vl + (nr-1)*vr) / df
	t := (ml - mr) / math.Sqrt(pooled*(1/nl+1/nr))
	if math.IsNaN(t) {
		// Equal constant segments give 0/0 (and values near the float64
		// range overflow): no evidence of a change, and a NaN p-value is
		// never below a threshold. gonum would reject the NaN argument.
		st.p = math.NaN()
		return st
	}
	st.p = 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Survival(math.Abs(t))
	return st
}

// ratioInterval returns After/Before with its 95 % interval. The interval
// is symmetric on the log scale: by the delta method the variance of the
// log of a segment mean is s²/(n·mean²), the two are added as in Welch's
// test and the t quantile uses the Welch–Satterthwaite degrees of freedom.
// This needs positive means but not positive values, so a metric that can
// be negative still gets a step size where its means are positive.
func ratioInterval(before, after []float64) (ratio, low, high float64) {
	nan := math.NaN()
	mb, ma := mean(before), mean(after)
	if !(mb > 0 && ma > 0) {
		return nan, nan, nan
	}
	ratio = ma / mb
	if len(before) < 2 || len(after) < 2 {
		return ratio, nan, nan
	}
	nb, na := float64(len(before)), float64(len(after))
	// Squared relative standard errors of each mean.
	ub := sumSq(before, mb) / (nb - 1) / nb / (mb * mb)
	ua := sumSq(after, ma) / (na - 1) / na / (ma * ma)
	se := math.Sqrt(ub + ua)
	if se == 0 {
		return ratio, ratio, ratio
	}
	df := (ub + ua) * (ub + ua) / (ub*ub/(nb-1) + ua*ua/(na-1))
	if math.IsNaN(se) || math.IsInf(se, 0) || !(df >= 1) || math.IsInf(df, 0) {
		// Only values near the float64 range overflow here.
		return ratio, nan, nan
	}
	q := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(0.975)
	lr := math.Log(ratio)
	return ratio, math.Exp(lr - q*se), math.Exp(lr + q*se)
}

// mean is the arithmetic mean; NaN for an empty slice.
func mean(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// sumSq is the sum of squared deviations from m.
func sumSq(x []float64, m float64) float64 {
	s := 0.0
	for _, v := range x {
		d := v - m
		s += d * d
	}
	return s
}
