package stats

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// exactQuantile is the nearest-rank percentile of xs, computed from the sorted observations.
func exactQuantile(xs []float64, p float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

func TestHistMergedQuantilesMatchPooledObservations(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	// Two clients with different distributions: a fast one and a slow, heavy-tailed one.
	var all []float64
	merged := NewHist()
	for c, scale := range []float64{20, 80} {
		h := NewHist()
		for i := 0; i < 20000+c*5000; i++ {
			v := scale * math.Exp(rng.NormFloat64()*0.3)
			all = append(all, v)
			if err := h.Add(v); err != nil {
				t.Fatal(err)
			}
		}
		// Through the wire form, as the agent ships it.
		data, err := json.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		var back Hist
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatal(err)
		}
		merged.Merge(&back)
	}
	if merged.Count() != uint64(len(all)) {
		t.Fatalf("count %d, want %d", merged.Count(), len(all))
	}
	for _, p := range []float64{1, 50, 90, 99, 99.9} {
		got, want := merged.Quantile(p), exactQuantile(all, p)
		if rel := math.Abs(got-want) / want; rel > (HistGrowth-1)/2+1e-9 {
			t.Errorf("p%v: merged %v, pooled exact %v (off by %.3f%%, bound %.2f%%)", p, got, want, rel*100, (HistGrowth-1)*50)
		}
	}
	var sum float64
	for _, v := range all {
		sum += v
	}
	if got, want := merged.Mean(), sum/float64(len(all)); math.Abs(got-want) > 1e-9*want {
		t.Errorf("mean %v, want %v", got, want)
	}
}

func TestHistRejectsBadInput(t *testing.T) {
	h := NewHist()
	for _, v := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if err := h.Add(v); err == nil {
			t.Errorf("Add(%v) accepted", v)
		}
	}
	if !math.IsNaN(h.Quantile(50)) || !math.IsNaN(h.Mean()) {
		t.Error("empty histogram gives a number")
	}
	var back Hist
	if err := json.Unmarshal([]byte(`{"growth":1.01,"n":3,"buckets":[[4100,2]]}`), &back); err == nil {
		t.Error("counts that do not add up accepted")
	}
	if err := json.Unmarshal([]byte(`{"growth":1.1,"n":0,"buckets":[]}`), &back); err == nil {
		t.Error("another growth accepted")
	}
}

func TestJain(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want float64
	}{
		{[]float64{5, 5, 5, 5}, 1},
		{[]float64{8, 0, 0, 0}, 0.25},
		{[]float64{1, 3}, 16.0 / 20},
	} {
		if got := Jain(c.xs); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Jain(%v) = %v, want %v", c.xs, got, c.want)
		}
	}
	if !math.IsNaN(Jain(nil)) || !math.IsNaN(Jain([]float64{0, 0})) {
		t.Error("Jain of nothing is a number")
	}
}
