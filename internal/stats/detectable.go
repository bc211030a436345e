package stats

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// detectBasis is what a comparison's "could detect" figure is computed from: the standard
// error and degrees of freedom of the difference its verdict tests, the scale of that
// difference, and for the unpaired analysis the sample sizes of its rank test.
type detectBasis struct {
	// se and df belong to the tested difference: the log of the ratio of means (log set) or
	// the difference in the metric's units (Points).
	se, df float64
	log    bool
	// rank marks the unpaired analysis, whose verdict also needs the Mann-Whitney test on na
	// against nb values.
	rank   bool
	na, nb int
}

// DetectableAt is the smallest difference this comparison's verdict would call four times in
// five (DefaultPower) at two-sided level alpha, at its noise and sample sizes: a relative
// difference of the means (0.04: 4 %) for a ratio, a difference in the metric's units for
// Points. A ranking or a family adjusted for several tests asks it at the level its adjusted
// test needs (alpha/m for Holm over m tests). It is +Inf where the rank test cannot reach
// alpha at these sample sizes and NaN where the comparison has no standard error.
//
// The shift is the noncentral t's (DetectableNCP at alpha/2, the far tail of a two-sided test
// being negligible), exact for normal noise where the plug-in (t(1-alpha/2) + t(0.8))·se
// caught such a shift 0.66-0.77 of the time. Two corrections make the printed figure mean what
// it says at a run's few rounds:
//   - the standard error is estimated, and a sample SD falls short of the true one more often
//     than not (its median is sqrt(median(chi2_df)/df) of it: 0.92 at 4 degrees of freedom);
//     the figure is scaled by the inverse, so that half the comparisons of a given noise print
//     more and half less than what that noise can detect;
//   - the unpaired verdict also needs the Mann-Whitney test, which loses against the t: its
//     exact test reaches only the sizes its U distribution allows (0.032 at 5 against 5, not
//     0.05) and, on normal (log-normal values') noise, it needs pi/3 times the t's samples
//     (Pitman efficiency 3/pi); the t's shift is taken at that size and times sqrt(pi/3).
//
// TestDetectableMeansWhatItSays: a true shift equal to the median printed figure is caught
// 0.78-0.85 of the time, paired and unpaired.
func (c Comparison) DetectableAt(alpha float64) float64 {
	d := c.det
	level, factor := alpha, 1.0
	if d.rank {
		level, factor = mwuSize(d.na, d.nb, alpha), math.Sqrt(math.Pi/3)
	}
	switch {
	case level == 0:
		return math.Inf(1)
	case math.IsNaN(d.se) || d.se < 0:
		return math.NaN()
	case d.se == 0:
		return 0
	}
	shift := detectFactor(d.df, level/2) * factor * d.se
	if d.log {
		return math.Expm1(shift)
	}
	return shift
}

// detectFactor is DetectableNCP(df, level, DefaultPower) times the median correction of an
// estimated standard error, sqrt(df/median(chi2_df)).
func detectFactor(df, level float64) float64 {
	if !(df > 0) {
		return math.Inf(1)
	}
	return DetectableNCP(df, level, DefaultPower) * MedianSEFactor(df)
}

// MedianSEFactor is sqrt(df/median(chi2_df)): how much a standard error estimated with df
// degrees of freedom falls short of the true one at the median (1.09 at 6, 1.02 at 30). A
// figure planned from an estimated standard error is scaled by it, so that it is too short as
// often as too long, where the plain estimate is too short more often than not.
func MedianSEFactor(df float64) float64 {
	if !(df > 0) {
		return math.Inf(1)
	}
	return math.Sqrt(df / distuv.ChiSquared{K: df}.Quantile(0.5))
}

// mwuSize is the true two-sided size of mannWhitneyU's test at level alpha for na against nb
// untied values: the probability, under no difference, of a p-value below alpha. The exact
// test can only reach the sizes its U distribution allows, and the normal approximation's
// continuity correction makes it conservative (0.043 at 10 against 10). 0 where no U reaches
// alpha (3 against 3 at 0.05). Beyond 50 against 50 it is alpha: the exact tail would cost
// more than the size differs.
func mwuSize(na, nb int, alpha float64) float64 {
	if na < 1 || nb < 1 {
		return 0
	}
	fx, fy := float64(na), float64(nb)
	if na > exactMaxN && nb > exactMaxN {
		if na*nb > 2500 {
			return alpha
		}
		// The smallest U whose continuity-corrected z gives p < alpha.
		mu, sd := fx*fy/2, math.Sqrt(fx*fy*(fx+fy+1)/12)
		u := int(math.Floor(mu + 0.5 + distuv.UnitNormal.Quantile(1-alpha/2)*sd + 1))
		for u > 0 && 2*distuv.UnitNormal.Survival((float64(u-1)-mu-0.5)/sd) < alpha {
			u--
		}
		return math.Min(1, 2*mwuExactUpperTail(na, nb, u))
	}
	size := 0.0
	for u := na * nb; 2*u >= na*nb; u-- {
		p := 2 * mwuExactUpperTail(na, nb, u)
		if p >= alpha {
			break
		}
		size = p
	}
	return size
}
