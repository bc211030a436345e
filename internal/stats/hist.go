package stats

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
)

// HistGrowth is the ratio between the bounds of a Hist bucket: a value is known to within
// 1 %, so a merged percentile is within 0.5 % of the exact one.
const HistGrowth = 1.01

// Hist is a log-bucketed histogram of positive values (latencies in µs). Histograms of
// several clients merge exactly, so percentiles of all of their observations can be computed
// without shipping every observation; averaging per-client percentiles instead gives a figure
// that is no percentile of anything.
type Hist struct {
	counts   map[int]uint64
	n        uint64
	sum      float64
	min, max float64
}

// NewHist returns an empty histogram.
func NewHist() *Hist { return &Hist{counts: map[int]uint64{}} }

// bucket is the index of the bucket holding v: (growth^(i-1), growth^i].
func bucket(v float64) int { return int(math.Ceil(math.Log(v) / math.Log(HistGrowth))) }

// Add records one observation; values <= 0 or not finite are rejected.
func (h *Hist) Add(v float64) error {
	if !(v > 0) || math.IsInf(v, 0) {
		return fmt.Errorf("histogram: expected a positive finite value, got %v", v)
	}
	h.counts[bucket(v)]++
	if h.n == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.n++
	h.sum += v
	return nil
}

// Merge adds every observation of o to h.
func (h *Hist) Merge(o *Hist) {
	if o == nil || o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = math.Max(h.max, o.max)
	h.n += o.n
	h.sum += o.sum
}

// Count is the number of observations.
func (h *Hist) Count() uint64 { return h.n }

// Mean is the exact mean of the observations (NaN when empty).
func (h *Hist) Mean() float64 {
	if h.n == 0 {
		return math.NaN()
	}
	return h.sum / float64(h.n)
}

// Quantile returns the nearest-rank p-th percentile (0 < p <= 100): the smallest bucket with at
// least p % of the observations at or below it, as the middle of that bucket clamped to the
// observed extremes. NaN when empty.
func (h *Hist) Quantile(p float64) float64 {
	if h.n == 0 {
		return math.NaN()
	}
	rank := uint64(math.Ceil(p / 100 * float64(h.n)))
	rank = min(max(rank, 1), h.n)
	idx := make([]int, 0, len(h.counts))
	for i := range h.counts {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	var seen uint64
	for _, i := range idx {
		seen += h.counts[i]
		if seen >= rank {
			hi := math.Pow(HistGrowth, float64(i))
			mid := (hi/HistGrowth + hi) / 2
			return math.Min(math.Max(mid, h.min), h.max)
		}
	}
	return h.max
}

// histJSON is the wire form: sparse buckets as [index, count] pairs.
type histJSON struct {
	Growth  float64     `json:"growth"`
	N       uint64      `json:"n"`
	Sum     float64     `json:"sum"`
	Min     float64     `json:"min"`
	Max     float64     `json:"max"`
	Buckets [][2]uint64 `json:"buckets"`
}

// MarshalJSON writes the histogram compactly; bucket indices are offset so they stay unsigned.
func (h *Hist) MarshalJSON() ([]byte, error) {
	w := histJSON{Growth: HistGrowth, N: h.n, Sum: h.sum, Min: h.min, Max: h.max, Buckets: [][2]uint64{}}
	idx := make([]int, 0, len(h.counts))
	for i := range h.counts {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		w.Buckets = append(w.Buckets, [2]uint64{uint64(i + histOffset), h.counts[i]})
	}
	return json.Marshal(w)
}

// histOffset keeps bucket indices of values down to 1e-9 non-negative on the wire.
const histOffset = 4096

// UnmarshalJSON reads what MarshalJSON wrote, refusing histograms of another growth or whose
// counts do not add up.
func (h *Hist) UnmarshalJSON(b []byte) error {
	var w histJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("histogram: %w", err)
	}
	if w.Growth != HistGrowth {
		return fmt.Errorf("histogram: growth: expected %v, got %v", HistGrowth, w.Growth)
	}
	*h = Hist{counts: map[int]uint64{}, n: w.N, sum: w.Sum, min: w.Min, max: w.Max}
	var total uint64
	for _, b := range w.Buckets {
		h.counts[int(b[0])-histOffset] += b[1]
		total += b[1]
	}
	if total != w.N {
		return fmt.Errorf("histogram: buckets hold %d observations, n says %d", total, w.N)
	}
	return nil
}

// Jain is Jain's fairness index of xs, (Σx)² / (n·Σx²): 1 when every value is equal, 1/n when
// one takes everything. NaN for no values or all zeros.
func Jain(xs []float64) float64 {
	var sum, sq float64
	for _, x := range xs {
		sum += x
		sq += x * x
	}
	if len(xs) == 0 || sq == 0 {
		return math.NaN()
	}
	return sum * sum / (float64(len(xs)) * sq)
}
