package stats

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Multiple-comparison adjustments accepted by AdjustPValues.
const (
	// AdjustNone leaves every p-value as it is: each verdict is a test of its own.
	AdjustNone = "none"
	// AdjustHolm is Holm's step-down method. It bounds the chance of even one false verdict
	// among the family (family-wise error rate) under any dependence between the tests,
	// which suits the metrics of one comparison: they come from the same samples.
	AdjustHolm = "holm"
	// AdjustBH is the Benjamini-Hochberg step-up method. It bounds the expected share of
	// false verdicts among the verdicts given (false discovery rate) and keeps far more
	// power than Holm when many metrics truly differ, as between two datapaths.
	AdjustBH = "bh"
)

// AdjustMethods lists the adjustments, for help texts and error messages.
func AdjustMethods() []string { return []string{AdjustBH, AdjustHolm, AdjustNone} }

// AdjustPValues returns the p-values adjusted for testing them all at once, in the order
// given, so that "adjusted p < alpha" is the method's decision at level alpha. NaN marks a
// test that was not made: it stays NaN and does not count in the family's size. The results
// match R's p.adjust (methods "holm" and "BH") and scipy.stats.false_discovery_control.
func AdjustPValues(p []float64, method string) ([]float64, error) {
	out := make([]float64, len(p))
	copy(out, p)
	var idx []int // indices of the tests made, by ascending p
	for i, v := range p {
		if math.IsNaN(v) {
			continue
		}
		if v < 0 || v > 1 {
			return nil, fmt.Errorf("stats: p-value %v outside [0, 1]", v)
		}
		idx = append(idx, i)
	}
	sort.SliceStable(idx, func(a, b int) bool { return p[idx[a]] < p[idx[b]] })
	m := float64(len(idx))
	switch method {
	case AdjustNone:
	case AdjustHolm:
		// The k-th smallest is scaled by m-k+1; a running maximum keeps the order.
		running := 0.0
		for k, i := range idx {
			running = math.Max(running, math.Min(1, (m-float64(k))*p[i]))
			out[i] = running
		}
	case AdjustBH:
		// The k-th smallest is scaled by m/k; a running minimum from the largest down keeps
		// the order.
		running := 1.0
		for k := len(idx) - 1; k >= 0; k-- {
			i := idx[k]
			running = math.Min(running, p[i]*m/float64(k+1))
			out[i] = running
		}
	default:
		return nil, fmt.Errorf("stats: unknown adjustment %q, expected one of %s", method, strings.Join(AdjustMethods(), ", "))
	}
	return out, nil
}

// AdjustedFloor is, for each test of a family, the smallest adjusted p-value it could have got
// at its sample sizes with the rest of the family as observed: its adjusted p with its own
// p-value replaced by minP (the smallest its test can give; 0 for a test without a floor).
// Where that is at or above alpha the test was untestable in this family: no data of its own
// could have made it significant, which says more than "not significant" (under Holm a
// family of twelve rank tests at 5 against 5 floors at 12·0.0079 = 0.095). NaN stays NaN,
// as in AdjustPValues.
func AdjustedFloor(p, minP []float64, method string) ([]float64, error) {
	if len(minP) != len(p) {
		return nil, fmt.Errorf("stats: %d p-values and %d floors", len(p), len(minP))
	}
	out := make([]float64, len(p))
	q := make([]float64, len(p))
	for i := range p {
		out[i] = math.NaN()
		if math.IsNaN(p[i]) {
			continue
		}
		copy(q, p)
		q[i] = math.Min(p[i], minP[i])
		adj, err := AdjustPValues(q, method)
		if err != nil {
			return nil, err
		}
		out[i] = adj[i]
	}
	return out, nil
}
