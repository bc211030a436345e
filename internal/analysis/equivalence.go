package analysis

import (
	"fmt"
	"math"
	"strings"

	"github.com/cnibench/cnibench/internal/stats"
)

// EquivalenceMargin is the band a comparison must lie inside to be equivalent at margin m (a
// run's --margin, 0.02 for ±2 %), on the scale of its t estimate (Ranked.Est): for a ratio
// ±log(1+m), the ratio of means within [1/(1+m), 1+m]; for a figure compared in points (UDP
// loss) ±PointsMargin(m, level) at the pair's mean loss level.
func EquivalenceMargin(e Ranked, m float64) (lo, hi float64) {
	if e.Points {
		pp := PointsMargin(m, e.Mean-e.Diff/2)
		return -pp, pp
	}
	return -math.Log1p(m), math.Log1p(m)
}

// PointsMargin is the equivalence margin, in percentage points, of two losses whose mean is
// level percent, at margin m. Read as m·100 points, as it was, ±2 pp decided nearly every
// comparison of losses near 0-1 %: 0.1 % against 1.5 % was "equivalent". Loss is judged by
// what it costs a TCP flow, whose throughput goes as 1/sqrt(loss) (Mathis et al.): losses
// within a factor (1+m)² of each other move it by at most the factor 1+m, the ratio margin of
// every other figure, which at level L is ±((1+m)²-1)·L points (±0.2 pp at 5 % and the
// default 2 %). Below a loss of about 0.02 % a 10 Gbit/s flow at a 100 µs round trip is
// limited by its link, not by loss, so the margin never falls below m·1 pp (0.02 pp at 2 %).
func PointsMargin(m, level float64) float64 {
	return math.Max(((1+m)*(1+m)-1)*math.Max(level, 0), m)
}

// EquivalenceLevel is the level at which a precision run's look after its n-th round may call
// a comparison equivalent: alpha·5/((n+2)(n+3)) from 3 rounds on (alpha/6 at 3 rounds, 0.089
// alpha at 5, 0.032 alpha at 10, 0.015 alpha at 16), 0 before. The loop looks after every
// round and stops a comparison the first time it is equivalent, and with a bar of 2.5 % at
// every look (a 95 % interval inside the margin) a true difference on the margin was called
// equivalent at some look 8.8 % of the time at CV 2 % (TestEquivalenceOverLooks). These levels
// telescope to alpha over rounds 3, 4, 5... however many looks the budget allows, so the chance
// of a false "equivalent" over the whole run is at most alpha (Bonferroni over the looks; the
// looks are correlated, and the test measures 1.1 %). The offset of 3 spends less on the
// first rounds, at which a ±2 % equivalence is out of reach anyway, than 2/(n(n-1)) would,
// and more on the later ones. The price is rounds: at CV 1 % identical targets are shown
// equivalent within ±2 % by round 16 nine times in ten, at CV 2 % 5 % of the time by round
// 20 and a quarter by round 30; until then the loop goes on to its budget.
func EquivalenceLevel(n int) float64 {
	if n < stats.MinPairedBlocks {
		return 0
	}
	return stats.DefaultAlpha * 5 / (float64(n+2) * float64(n+3))
}

// Looks is the round a comparison's latest look came after: its rounds, complete or not, where
// paired, else the larger side's samples.
func Looks(e Ranked) int {
	if e.Paired {
		return e.NA + e.Dropped
	}
	return max(e.NA, e.NB)
}

// Equivalent reports whether a compared entry is shown to lie within margin m of its reference
// (EquivalenceMargin): the two one-sided tests at EquivalenceLevel of its rounds
// (stats.EquivalenceP). False where the comparison has no t estimate or m is not positive.
func Equivalent(e Ranked, m float64) bool {
	if !(m > 0) || math.IsNaN(e.Est.SE) {
		return false
	}
	lo, hi := EquivalenceMargin(e, m)
	return stats.EquivalenceP(e.Est, lo, hi) < EquivalenceLevel(Looks(e))
}

// MarginText is an entry's equivalence margin as printed: "±2 %" of the ratio, or for loss
// "±0.02 pp".
func MarginText(e Ranked, m float64) string {
	if e.Points {
		_, hi := EquivalenceMargin(e, m)
		return "±" + Pct(hi) + " pp"
	}
	return "±" + Pct(m*100) + " %"
}

// Pct formats a percentage, or percentage points, with two significant digits, trailing zeros
// dropped, and never in exponent form: 150, 12, 3.4, 2, 0.021 (%.2g wrote 150 as 1.5e+02).
func Pct(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "-"
	case v == 0:
		return "0"
	}
	digits := max(0, 1-int(math.Floor(math.Log10(math.Abs(v)))))
	s := fmt.Sprintf("%.*f", digits, v)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}
