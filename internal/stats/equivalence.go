package stats

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// EquivalenceP is the p-value of the two one-sided t tests (TOST) that the true shift lies
// inside (lo, hi), on the estimate's own scale: the larger of P(T <= (Center-hi)/SE) and
// P(T >= (Center-lo)/SE). Below alpha the shift is shown to lie inside at level alpha: the
// same as a (1-2·alpha) interval inside (lo, hi), so a 95 % interval inside the margin is
// TOST at 2.5 %. A true shift on either bound is called inside at most alpha of the time.
// With no spread it is 0 inside and 1 outside; NaN where the estimate has none.
func EquivalenceP(e Estimate, lo, hi float64) float64 {
	switch {
	case math.IsNaN(e.Center) || math.IsNaN(e.SE) || e.DF <= 0 && e.SE > 0:
		return math.NaN()
	case e.SE == 0:
		if lo < e.Center && e.Center < hi {
			return 0
		}
		return 1
	}
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: e.DF}
	return math.Max(t.CDF((e.Center-hi)/e.SE), t.Survival((e.Center-lo)/e.SE))
}
