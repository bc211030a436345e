package changepoint

import "math"

// segment is the half-open range [lo, hi) of a series.
type segment struct{ lo, hi int }

// segments returns the segments that the sorted change points cps cut
// [0, n) into.
func segments(cps []int, n int) []segment {
	out := make([]segment, 0, len(cps)+1)
	lo := 0
	for _, c := range cps {
		out = append(out, segment{lo, c})
		lo = c
	}
	return append(out, segment{lo, n})
}

// energy evaluates the E-Divisive statistic on one window of a series.
// colSum[k*n+j] holds the sum of |z[i]-z[j]| over i < k, so that every sum
// of distances the statistic needs is a difference of two entries and the
// whole (τ, κ) search of a segment costs O(len²).
type energy struct {
	n      int
	colSum []float64
}

// newEnergy precomputes the distance column sums of window z.
func newEnergy(z []float64) *energy {
	n := len(z)
	e := &energy{n: n, colSum: make([]float64, (n+1)*n)}
	for k := 1; k <= n; k++ {
		prev, cur := e.colSum[(k-1)*n:k*n], e.colSum[k*n:(k+1)*n]
		for j := range n {
			cur[j] = prev[j] + math.Abs(z[k-1]-z[j])
		}
	}
	return e
}

// dist sums |z[i]-z[j]| over i in [lo, hi).
func (e *energy) dist(lo, hi, j int) float64 {
	return e.colSum[hi*e.n+j] - e.colSum[lo*e.n+j]
}

// candidate is a proposed change point: the first index of the new segment
// and the value of the statistic there.
type candidate struct {
	index int
	q     float64
}

// best returns the split of segment s that maximises Matteson and James'
// q̂(τ, κ) = 2/(n+m)·ΣΣ|X−Y| − 2m/((n+m)(n−1))·Σ|X−X'| − 2n/((n+m)(m−1))·Σ|Y−Y'|
// for X = z[s.lo:τ] (n points) and Y = z[τ:κ] (m points), κ ≤ s.hi, both at
// least minSize long. As in Otava, κ is searched as well as τ, so a short
// step inside a long segment is not diluted by the points after it, and a
// within-sample term whose sample has one point counts as zero. Ties keep
// the smallest τ, then the smallest κ, which is the order numpy's argmax
// scans Otava's matrix in. ok is false when no split has a finite q̂.
func (e *energy) best(s segment, minSize int) (c candidate, ok bool) {
	c.q = math.Inf(-1)
	withinX := 0.0
	for tau := s.lo + 1; tau < s.hi; tau++ {
		withinX += e.dist(s.lo, tau-1, tau-1)
		nx := tau - s.lo
		if nx < minSize {
			continue
		}
		if s.hi-tau < minSize {
			break
		}
		cross, withinY := 0.0, 0.0
		for kappa := tau + 1; kappa <= s.hi; kappa++ {
			j := kappa - 1 // the point that joins Y
			cross += e.dist(s.lo, tau, j)
			withinY += e.dist(tau, j, j)
			my := kappa - tau
			if my < minSize {
				continue
			}
			nm := float64(nx + my)
			coefX := 0.0
			if nx > 1 {
				coefX = 2 * float64(my) / (nm * float64(nx-1))
			}
			coefY := 0.0
			if my > 1 {
				coefY = 2 * float64(nx) / (nm * float64(my-1))
			}
			q := 2/nm*cross - coefX*withinX - coefY*withinY
			if q > c.q {
				c, ok = candidate{index: tau, q: q}, true
			}
		}
	}
	return c, ok
}

// detectWindow runs E-Divisive on window z (Otava's ChangePointDetector):
// it keeps splitting, each time at the best candidate over all current
// segments, as long as the t-test between the two halves of the segment
// that candidate splits has a p-value at or below level. It returns the
// change points as sorted indices into z.
func detectWindow(z []float64, cfg config, level float64) []int {
	minSize := cfg.minSize
	e := newEnergy(z)
	var cps []int
	for {
		segs := segments(cps, len(z))
		var best candidate
		var in segment
		found := false
		for _, s := range segs {
			if s.hi-s.lo < 2*minSize {
				continue
			}
			c, ok := e.best(s, minSize)
			if ok && (!found || c.q > best.q) {
				best, in, found = c, s, true
			}
		}
		if !found {
			return cps
		}
		st := studentT(z[in.lo:best.index], z[best.index:in.hi], cfg.otavaTTest)
		if !(st.p <= level) {
			return cps
		}
		cps = insertSorted(cps, best.index)
	}
}

// insertSorted inserts v into the sorted slice s.
func insertSorted(s []int, v int) []int {
	i := 0
	for i < len(s) && s[i] < v {
		i++
	}
	s = append(s, 0)
	copy(s[i+1:], s[i:])
	s[i] = v
	return s
}
