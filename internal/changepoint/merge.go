package changepoint

import (
	"math"
	"slices"
)

// split is Otava's split step: it runs E-Divisive on windows of windowLen
// points and returns the union of what they find, the weak change points,
// sorted. A window starts half a window after the previous one, or at the
// last change point the previous one found if that is further on, so a
// step near a window's end is seen again with data on both sides of it.
// The windows use Otava's relaxed first-pass level.
func split(x []float64, cfg config) []int {
	level := firstPassLevel(cfg.level)
	var weak []int
	start := 0
	for start < len(x) {
		end := min(start+windowLen, len(x))
		last := 0
		for _, c := range detectWindow(x[start:end], cfg, level) {
			last = start + c
			if !slices.Contains(weak, last) {
				weak = append(weak, last)
			}
		}
		start = max(last, start+windowLen/2)
	}
	slices.Sort(weak)
	return weak
}

// merge is Otava's merge step: while some change point's t-test against
// its adjacent segments has a p-value at or above level, it removes the one
// with the largest p-value and re-tests its neighbours, whose segments have
// grown. Removing the weakest first matters: a weak point next to a strong
// one is judged on the segments that remain once the noise around it is
// gone.
//
// Otava 0.8.0 re-tests the point after the removed one and the one after
// that, so the point before keeps a p-value computed on its old, shorter
// right-hand segment; its maintainers have called that re-test suspect.
// This re-tests the two points that actually gained a segment, unless
// cfg.otavaRetest asks for Otava's choice.
//
// Otava also removes, once all p-values are below level, any point whose
// relative change is not above min_magnitude (0 by default). With
// min_magnitude 0 that only removes points with equal segment means, which
// have p = 1 and are already gone, so it is left out.
func merge(x []float64, weak []int, cfg config) []int {
	cps := slices.Clone(weak)
	p := make([]float64, len(cps))
	for i := range cps {
		p[i] = retest(x, cps, i, cfg)
	}
	for len(cps) > 0 {
		w := weakest(p)
		if p[w] < cfg.level {
			return cps
		}
		cps = slices.Delete(cps, w, w+1)
		p = slices.Delete(p, w, w+1)
		neighbours := []int{w - 1, w}
		if cfg.otavaRetest {
			neighbours = []int{w, w + 1}
		}
		for _, i := range neighbours {
			if i >= 0 && i < len(cps) {
				p[i] = retest(x, cps, i, cfg)
			}
		}
	}
	return cps
}

// retest is the p-value of change point cps[i] between its adjacent
// segments.
func retest(x []float64, cps []int, i int, cfg config) float64 {
	lo, hi := bounds(cps, i, len(x))
	return studentT(x[lo:cps[i]], x[cps[i]:hi], cfg.otavaTTest).p
}

// weakest returns the index of the largest p-value, the first on ties. A
// NaN p-value (no evidence either way) counts as the weakest of all.
func weakest(p []float64) int {
	w := 0
	for i, v := range p {
		if math.IsNaN(v) {
			return i
		}
		if v > p[w] {
			w = i
		}
	}
	return w
}
