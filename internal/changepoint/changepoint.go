// Package changepoint finds the runs at which a benchmark metric changed
// level, given one value per stored run in time order.
//
// The method is E-Divisive means as Apache Otava (formerly Hunter,
// Fleming et al., ICPE 2023, https://doi.org/10.1145/3578244.3583719)
// runs it: the series is split recursively at the point that maximises the
// energy-distance statistic of Matteson and James, each split is kept only
// if a two-sided Student t-test between the two adjacent segments is
// significant, and the weak change points found that way are then pruned
// bottom-up, re-testing the neighbours of every removed point. Otava's
// t-test variant is used instead of the permutation test so that a run of
// the detector is deterministic: the same stored history always yields the
// same verdict in CI.
//
// Three things differ from Otava 0.8.0, on purpose:
//
//   - Options.Alpha is a per-series false-alarm level. A t-test at the
//     point chosen as the best of many candidate splits is anti-conservative
//     (at a per-test 0.05, a third to a half of flat series get a false
//     change point), so the per-test threshold is Alpha divided by the
//     number of candidate split positions (Bonferroni). Otava's max_pvalue
//     is that per-test threshold; see SplitLevel.
//   - The t-test uses the sample variance; Otava uses the population one,
//     which makes short segments look tighter than they are.
//   - After removing a weak change point, both of its neighbours are
//     re-tested; Otava re-tests the right one only.
//
// Options.MinSize also bounds the segment length. Otava has no such bound,
// which is MinSize 1; the default of 3 keeps a single outlying run from
// making a segment of its own and failing CI, at the price of confirming a
// change only once three runs show it.
//
// With those switched back to Otava's behaviour and MinSize 1, the
// algorithm returns exactly Otava's change points on the stored panel in
// testdata; testdata/otava_crosscheck.py regenerates that panel.
package changepoint

import (
	"errors"
	"fmt"
	"math"
)

// Default option values, used where an Options field is zero.
const (
	// DefaultAlpha is the default per-series false-alarm level: the usual 5 %.
	DefaultAlpha = 0.05
	// DefaultMinSize is the default fewest runs in a segment: three runs are
	// the fewest whose mean is not dominated by a single outlying run.
	DefaultMinSize = 3
)

// windowLen is Otava's default window_len: the split step looks for
// change points in windows of this many points, advancing by half a window.
// It bounds the cost of a split to O(windowLen^2) per candidate whatever the
// length of the series.
const windowLen = 50

// Sentinel errors, so that callers can tell bad input from bad options.
var (
	// ErrNotFinite reports a NaN or infinite value in the series.
	ErrNotFinite = errors.New("value is not finite")
	// ErrBadOptions reports an option outside its valid range.
	ErrBadOptions = errors.New("invalid options")
)

// Options tunes Detect. The zero value asks for the defaults.
type Options struct {
	// Alpha is the significance level for keeping a change point, meant as
	// the per-series false-alarm rate: on a series without any change, the
	// chance that Detect reports one is about Alpha or less. Zero means
	// DefaultAlpha; otherwise it must be in (0, 1).
	Alpha float64
	// MinSize is the fewest points in a segment, so the fewest runs before
	// the first and after the last change point. Zero means DefaultMinSize;
	// 1 behaves as Otava, which has no such bound.
	MinSize int
}

// Change is one change point with the size of its step.
type Change struct {
	// Index is the index in the series of the first value of the new
	// segment.
	Index int
	// Before and After are the means of the segments just before and just
	// after the change point (bounded by the neighbouring change points or
	// the ends of the series).
	Before, After float64
	// Ratio is After/Before. RatioLow and RatioHigh bound its 95 %
	// interval: a Welch interval on the log scale, using the delta method
	// for the log of each segment mean (variance s²/(n·mean²)) and
	// Welch–Satterthwaite degrees of freedom. All three are NaN unless both
	// means are positive; the bounds are NaN when a segment has one point.
	Ratio, RatioLow, RatioHigh float64
	// PValue is the two-sided p-value of the Student t-test (pooled sample
	// variance) between the two adjacent segments. It is not corrected for
	// the search over split points: the change point was kept because
	// PValue is below SplitLevel(len(series), o), not below Alpha.
	PValue float64
}

// withDefaults fills zero fields and rejects values outside their range,
// so that the algorithm never sees a level it cannot use.
func (o Options) withDefaults() (Options, error) {
	if o.Alpha == 0 {
		o.Alpha = DefaultAlpha
	}
	if !(o.Alpha > 0 && o.Alpha < 1) {
		return o, fmt.Errorf("changepoint: Alpha %v not in (0, 1): %w", o.Alpha, ErrBadOptions)
	}
	if o.MinSize == 0 {
		o.MinSize = DefaultMinSize
	}
	if o.MinSize < 1 {
		return o, fmt.Errorf("changepoint: MinSize %d < 1: %w", o.MinSize, ErrBadOptions)
	}
	if 2*o.MinSize > windowLen {
		// A window could never be split, so no change could ever be found.
		return o, fmt.Errorf("changepoint: MinSize %d > %d: %w", o.MinSize, windowLen/2, ErrBadOptions)
	}
	return o, nil
}

// SplitLevel returns the per-test significance threshold that Detect uses
// for a series of n values: Alpha over the number of positions at which the
// series could be split (n-2·MinSize+1), a Bonferroni bound on the chance
// that the best of them looks significant by luck. It is the value to give
// Otava as max_pvalue to reproduce Detect. It returns 0 when n is too short
// to split.
func SplitLevel(n int, o Options) (float64, error) {
	o, err := o.withDefaults()
	if err != nil {
		return 0, err
	}
	return splitLevel(n, o), nil
}

// splitLevel is SplitLevel for options that already have their defaults.
func splitLevel(n int, o Options) float64 {
	positions := n - 2*o.MinSize + 1
	if positions < 1 {
		return 0
	}
	return o.Alpha / float64(positions)
}

// Detect returns the change points of series, in increasing Index order.
// A series shorter than 2·MinSize has none. A NaN or infinite value is an
// error naming its index; negative values are allowed.
func Detect(series []float64, o Options) ([]Change, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	for i, v := range series {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("changepoint: series[%d] = %v: %w", i, v, ErrNotFinite)
		}
	}
	if len(series) < 2*o.MinSize {
		return nil, nil
	}
	cfg := config{minSize: o.MinSize, level: splitLevel(len(series), o)}
	return detect(series, cfg), nil
}

// config is what the algorithm needs, resolved from Options. The two
// otava* switches turn back on the two Otava 0.8.0 behaviours that Detect
// corrects, so that a test can check the rest of the algorithm against
// Otava's own output point for point.
type config struct {
	minSize int
	level   float64 // per-test threshold of the merge step
	// otavaTTest uses the population variance in the t-test, as Otava does.
	otavaTTest bool
	// otavaRetest re-tests the points Otava re-tests after a removal.
	otavaRetest bool
}

// detect runs the split and merge steps and describes what survives.
func detect(x []float64, cfg config) []Change {
	weak := split(x, cfg)
	return describe(x, merge(x, weak, cfg), cfg)
}

// firstPassLevel is Otava's relaxed threshold for the split step: the split
// step only proposes weak change points, and the merge step applies the real
// level, so a looser first pass lets the merge see points whose evidence
// grows once their segments are merged.
func firstPassLevel(level float64) float64 {
	switch {
	case level < 0.05:
		return level * 10
	case level < 0.5:
		return level * 2
	default:
		return level
	}
}

// describe turns the kept change point indices into Changes, measuring
// each step against the final adjacent segments.
func describe(x []float64, cps []int, cfg config) []Change {
	if len(cps) == 0 {
		return nil
	}
	out := make([]Change, len(cps))
	for i, idx := range cps {
		lo, hi := bounds(cps, i, len(x))
		before, after := x[lo:idx], x[idx:hi]
		st := studentT(before, after, cfg.otavaTTest)
		r, rl, rh := ratioInterval(before, after)
		out[i] = Change{
			Index:     idx,
			Before:    st.meanL,
			After:     st.meanR,
			Ratio:     r,
			RatioLow:  rl,
			RatioHigh: rh,
			PValue:    st.p,
		}
	}
	return out
}

// bounds returns the start of the segment before cps[i] and the end of the
// segment after it, given sorted change points over a series of length n.
func bounds(cps []int, i, n int) (lo, hi int) {
	if i > 0 {
		lo = cps[i-1]
	}
	hi = n
	if i+1 < len(cps) {
		hi = cps[i+1]
	}
	return lo, hi
}
