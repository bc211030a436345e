package split

import (
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// realCSV is k6 v1.8.1's output for Script's test (see testdata/README.md).
const realCSV = "testdata/k6_split_2vu_12s.csv"

// TestRealK6CSV checks Summarize on real k6 output against a naive reference that loads the
// whole (small) file and computes each figure directly, and against the counts the README
// states.
func TestRealK6CSV(t *testing.T) {
	data, err := os.ReadFile(realCSV)
	if err != nil {
		t.Fatal(err)
	}
	// The reference: every line split on commas (the file has no quoted fields).
	var start, last int64
	var durations []float64
	perWindow := map[int64][3]int64{} // first, other, errors
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n")[1:] {
		f := strings.Split(line, ",")
		ts, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "http_req_duration":
			if f[3] == "200" {
				v, _ := strconv.ParseFloat(f[2], 64)
				durations = append(durations, v)
			}
		case CounterName:
			if start == 0 {
				start = ts
			}
			last = max(last, ts)
			c := perWindow[max(ts-start, 0)/5000]
			switch f[4] {
			case "backend=backend-a":
				c[0]++
			case "backend=backend-b":
				c[1]++
			case "backend=error":
				c[2]++
			default:
				t.Fatalf("line %d: unexpected tags %q", i+2, f[4])
			}
			perWindow[max(ts-start, 0)/5000] = c
		}
	}

	f, err := os.Open(realCSV)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := Summarize(f, SummaryOptions{First: "backend-a", Weight: 40})
	if err != nil {
		t.Fatal(err)
	}

	if s.Requests != 236 || s.Errors != 33 || s.Backends["backend-a"] != 77 || s.Backends["backend-b"] != 126 || len(s.Backends) != 2 {
		t.Errorf("totals: got %d requests, %d errors, backends %v; want 236, 33, a 77 b 126", s.Requests, s.Errors, s.Backends)
	}
	if s.StartUnixMilli != start || s.SpanSeconds != float64(last-start)/1000 {
		t.Errorf("start/span: got %d/%v, want %d/%v", s.StartUnixMilli, s.SpanSeconds, start, float64(last-start)/1000)
	}
	if len(s.Windows) != 2 || s.Dropped == nil || s.Dropped.Seconds != 1.984 {
		t.Fatalf("windows: got %+v, dropped %+v; want 2 and a dropped 1.984 s tail", s.Windows, s.Dropped)
	}
	var shares []float64
	for i, w := range append(s.Windows, *s.Dropped) {
		c := perWindow[int64(i)]
		if w.First != c[0] || w.Other != c[1] || w.Errors != c[2] {
			t.Errorf("window %d: got %+v, want first/other/errors %v", i, w, c)
		}
		if i < 2 {
			shares = append(shares, float64(c[0])/float64(c[0]+c[1])-0.4)
		}
	}
	mean := (shares[0] + shares[1]) / 2
	if !near(float64(s.Accuracy.Mean), mean, 1e-12) || !near(float64(s.Accuracy.MeanAbs), (math.Abs(shares[0])+math.Abs(shares[1]))/2, 1e-12) {
		t.Errorf("accuracy: got %+v, want mean %v", s.Accuracy, mean)
	}
	// t(0.975, 1) = 12.706204736174698: two windows give a wide but finite interval.
	half := 12.706204736174698 * math.Abs(shares[0]-shares[1]) / math.Sqrt2 / math.Sqrt2
	if !near(float64(s.Accuracy.CIHigh-s.Accuracy.CILow), 2*half, 1e-9) {
		t.Errorf("interval: got [%v, %v], want half-width %v", s.Accuracy.CILow, s.Accuracy.CIHigh, half)
	}

	slices.Sort(durations)
	if s.Latency.N != int64(len(durations)) || s.Latency.N != 203 {
		t.Fatalf("latency n: got %d, want %d", s.Latency.N, len(durations))
	}
	rank := func(p float64) float64 { return durations[int(math.Ceil(p/100*float64(len(durations))))-1] }
	for _, p := range []struct {
		name      string
		got, want float64
	}{{"p50", float64(s.Latency.P50), rank(50)}, {"p90", float64(s.Latency.P90), rank(90)}, {"p99", float64(s.Latency.P99), rank(99)},
		{"max", float64(s.Latency.Max), durations[len(durations)-1]}} {
		if !near(p.got, p.want, p.want*0.005) {
			t.Errorf("%s: got %v ms, want %v ± 0.5 %%", p.name, p.got, p.want)
		}
	}
	// The proxy waits 100 ms before answering.
	if !(s.Latency.P50 > 100 && s.Latency.P50 < 150) {
		t.Errorf("p50: got %v ms, want just above the proxy's 100 ms", s.Latency.P50)
	}
}
