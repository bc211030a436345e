package split

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// t0 is the synthetic tests' first response, ms since the epoch; its 123 ms offset from a
// whole second checks that windows align to the first response, not to the clock.
const t0 = int64(1_700_000_000_123)

// header is the header k6 v1.8.1 writes for Script's systemTags (see testdata).
const header = "metric_name,timestamp,metric_value,status,extra_tags,metadata\n"

// csvBuilder writes synthetic k6 CSV rows.
type csvBuilder struct{ b strings.Builder }

func newCSV() *csvBuilder {
	c := &csvBuilder{}
	c.b.WriteString(header)
	return c
}

// resp adds one response of backend at t0+off ms, with its http_req_duration row.
func (c *csvBuilder) resp(off int64, backend string) *csvBuilder {
	status := "200"
	if backend == ErrorBackend {
		status = "503"
	}
	fmt.Fprintf(&c.b, "http_req_duration,%d,1.500000,%s,,\n", t0+off, status)
	fmt.Fprintf(&c.b, "%s,%d,1.000000,,backend=%s,\n", CounterName, t0+off, backend)
	return c
}

// raw adds a line as is.
func (c *csvBuilder) raw(line string) *csvBuilder {
	c.b.WriteString(line + "\n")
	return c
}

func (c *csvBuilder) String() string { return c.b.String() }

func summarize(t *testing.T, csv string, o SummaryOptions) Summary {
	t.Helper()
	s, err := Summarize(strings.NewReader(csv), o)
	if err != nil {
		t.Fatalf("Summarize: %v", err)
	}
	return s
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestWindowsAlignToFirstResponse(t *testing.T) {
	c := newCSV().
		raw(fmt.Sprintf("vus,%d,10.000000,,,", t0-900)). // not a response: does not anchor
		resp(0, "a").
		resp(-40, "b"). // out of order by 40 ms: first window
		resp(4999, "a").
		resp(5000, "b"). // second window starts exactly W after the first response
		resp(9999, "b").
		resp(10000, "a").
		resp(14000, "a")
	s := summarize(t, c.String(), SummaryOptions{First: "a", Weight: 50})
	if s.StartUnixMilli != t0 {
		t.Errorf("start: got %d, want %d", s.StartUnixMilli, t0)
	}
	want := [][2]int64{{2, 1}, {0, 2}, {2, 0}} // first, other per window
	if len(s.Windows) != len(want) || s.Dropped != nil {
		t.Fatalf("windows: got %+v dropped %+v, want %d windows and none dropped", s.Windows, s.Dropped, len(want))
	}
	for i, w := range want {
		got := s.Windows[i]
		if got.First != w[0] || got.Other != w[1] || got.StartSeconds != float64(5*i) {
			t.Errorf("window %d: got %+v, want start %ds first %d other %d", i, got, 5*i, w[0], w[1])
		}
	}
	if s.Windows[2].Seconds != 4 || s.Windows[0].Seconds != 5 {
		t.Errorf("window lengths: got %v and %v, want 5 and 4 (the last ends at the last response)", s.Windows[0].Seconds, s.Windows[2].Seconds)
	}
	if s.SpanSeconds != 14 || !near(float64(s.Rate), 7.0/14, 1e-12) {
		t.Errorf("span/rate: got %v s, %v/s; want 14 s, 0.5/s", s.SpanSeconds, s.Rate)
	}
}

func TestShortLastWindowDropped(t *testing.T) {
	for _, tc := range []struct {
		last    int64
		dropped bool
	}{
		{12499, true},  // 2.499 s of a 5 s window: dropped
		{12500, false}, // exactly half: kept
		{14999, false},
	} {
		c := newCSV().resp(0, "a").resp(6000, "b").resp(tc.last, "a")
		s := summarize(t, c.String(), SummaryOptions{First: "a", Weight: 50})
		if got := s.Dropped != nil; got != tc.dropped {
			t.Errorf("last response at +%d ms: dropped %v, want %v", tc.last, got, tc.dropped)
			continue
		}
		wantWindows := 3
		if tc.dropped {
			wantWindows = 2
			if s.Dropped.First != 1 || s.Dropped.StartSeconds != 10 {
				t.Errorf("dropped window: got %+v", *s.Dropped)
			}
		}
		if len(s.Windows) != wantWindows || s.Accuracy.N != wantWindows {
			t.Errorf("last response at +%d ms: %d windows, accuracy over %d; want %d", tc.last, len(s.Windows), s.Accuracy.N, wantWindows)
		}
		// The dropped window's response is still counted in the totals and the share.
		if s.Requests != 3 || s.Backends["a"] != 2 || !near(float64(s.Share), 2.0/3, 1e-12) {
			t.Errorf("totals: got %d requests, backends %v, share %v", s.Requests, s.Backends, s.Share)
		}
	}
}

func TestErrorsCounted(t *testing.T) {
	c := newCSV().resp(0, "a").resp(100, ErrorBackend).resp(200, "b").resp(300, ErrorBackend).resp(5100, "b")
	s := summarize(t, c.String(), SummaryOptions{First: "a", Weight: 50})
	if s.Requests != 5 || s.Errors != 2 {
		t.Errorf("requests/errors: got %d/%d, want 5/2", s.Requests, s.Errors)
	}
	if _, ok := s.Backends[ErrorBackend]; ok || len(s.Backends) != 2 {
		t.Errorf("backends: got %v, want a and b only", s.Backends)
	}
	if w := s.Windows[0]; w.Errors != 2 || w.First != 1 || w.Other != 1 || float64(w.Share) != 0.5 {
		t.Errorf("window 0: got %+v, want errors left out of the share", w)
	}
	// Failed requests stay out of the latency.
	if s.Latency.N != 3 {
		t.Errorf("latency samples: got %d, want the 3 answered 200", s.Latency.N)
	}
}

func TestWindowWithOnlyErrorsHasNoShare(t *testing.T) {
	c := newCSV().resp(0, "a").resp(5500, ErrorBackend).resp(10000, "b").resp(14000, "b")
	s := summarize(t, c.String(), SummaryOptions{First: "a", Weight: 50})
	if len(s.Windows) != 3 || !math.IsNaN(float64(s.Windows[1].Share)) || s.Accuracy.N != 2 {
		t.Fatalf("got windows %+v, accuracy n %d; want the error-only window without a share", s.Windows, s.Accuracy.N)
	}
	// Accuracies +0.5 and -0.5.
	if float64(s.Accuracy.Mean) != 0 || float64(s.Accuracy.MeanAbs) != 0.5 {
		t.Errorf("accuracy: got %+v", s.Accuracy)
	}
}

func TestPercentilesOnKnownData(t *testing.T) {
	c := newCSV()
	// 1..1000 ms answered 200, and slow failures that must not count.
	for i := 1; i <= 1000; i++ {
		c.raw(fmt.Sprintf("http_req_duration,%d,%d.000000,200,,", t0+int64(i), i))
	}
	for i := range 50 {
		c.raw(fmt.Sprintf("http_req_duration,%d,60000.000000,503,,", t0+int64(i)))
		c.raw(fmt.Sprintf("http_req_duration,%d,0.000000,0,,", t0+int64(i)))
	}
	c.resp(0, "a")
	s := summarize(t, c.String(), SummaryOptions{First: "a", Weight: 100})
	l := s.Latency
	if l.N != 1001 { // resp adds one more of 1.5 ms
		t.Fatalf("latency n: got %d, want 1001", l.N)
	}
	// Exact nearest-rank values are 500, 900, 990 (one 1.5 ms added below them); the
	// histogram is within 0.5 %.
	for _, p := range []struct {
		name      string
		got, want float64
	}{{"p50", float64(l.P50), 500}, {"p90", float64(l.P90), 900}, {"p99", float64(l.P99), 990}, {"max", float64(l.Max), 1000}} {
		if !near(p.got, p.want, p.want*0.005) {
			t.Errorf("%s: got %v ms, want %v ± 0.5 %%", p.name, p.got, p.want)
		}
	}
	if want := (500500 + 1.5) / 1001; !near(float64(l.Mean), want, 1e-9) {
		t.Errorf("mean: got %v, want %v", l.Mean, want)
	}
}

func TestAccuracyMath(t *testing.T) {
	// Four 5 s windows of 10 responses, with 5, 3, 4 and 4 from "first" (weight 40 %): the
	// accuracies are +0.1, -0.1, 0, 0. Errors do not dilute the share.
	c := newCSV()
	for w, firsts := range []int{5, 3, 4, 4} {
		for i := range 10 {
			b := "other-1"
			if i%2 == 1 {
				b = "other-2"
			}
			if i < firsts {
				b = "first"
			}
			c.resp(int64(w*5000+i*100), b)
		}
		c.resp(int64(w*5000+2000), ErrorBackend)
	}
	c.resp(19999, "first") // ends the last window at full length
	s := summarize(t, c.String(), SummaryOptions{First: "first", Weight: 40})
	if s.Accuracy.N != 4 || s.Dropped != nil {
		t.Fatalf("accuracy over %d windows (dropped %+v), want 4", s.Accuracy.N, s.Dropped)
	}
	wantShares := []float64{0.5, 0.3, 0.4, 5.0 / 11}
	for i, w := range s.Windows {
		if !near(float64(w.Share), wantShares[i], 1e-12) {
			t.Errorf("window %d share: got %v, want %v", i, w.Share, wantShares[i])
		}
	}
	d := []float64{0.1, -0.1, 0, 5.0/11 - 0.4}
	var mean, mad float64
	for _, x := range d {
		mean += x / 4
		mad += math.Abs(x) / 4
	}
	var ss float64
	for _, x := range d {
		ss += (x - mean) * (x - mean)
	}
	// t(0.975, 3) = 3.182446305284263 (scipy.stats.t.ppf).
	half := 3.182446305284263 * math.Sqrt(ss/3) / 2
	a := s.Accuracy
	if !near(float64(a.Mean), mean, 1e-12) || !near(float64(a.MeanAbs), mad, 1e-12) {
		t.Errorf("mean/mad: got %v/%v, want %v/%v", a.Mean, a.MeanAbs, mean, mad)
	}
	if !near(float64(a.CILow), mean-half, 1e-9) || !near(float64(a.CIHigh), mean+half, 1e-9) || a.Interval != "t" {
		t.Errorf("interval: got [%v, %v] (%s), want [%v, %v] (t)", a.CILow, a.CIHigh, a.Interval, mean-half, mean+half)
	}
	if s.Errors != 4 || s.Requests != 45 || s.Backends["first"] != 17 {
		t.Errorf("totals: got %d requests, %d errors, backends %v", s.Requests, s.Errors, s.Backends)
	}
}

func TestMalformedCSV(t *testing.T) {
	ok := fmt.Sprintf("%s,%d,1.000000,,backend=a,", CounterName, t0)
	for _, tc := range []struct {
		name, csv string
		want      []string
	}{
		{"wrong field count", header + ok + "\n" + ok + "\nvus,1,2\n", []string{"line 4", "wrong number of fields"}},
		{"bad quote", header + ok + "\nhttp_req_duration,\"1,2,3,4,5\n", []string{"line 3"}},
		{"timestamp in seconds", header + ok + "\n" + fmt.Sprintf("%s,%d,1.000000,,backend=a,", CounterName, t0/1000) + "\n",
			[]string{"line 3", "timeFormat=unix_milli"}},
		{"rfc3339 timestamp", header + fmt.Sprintf("%s,2023-11-14T22:13:20Z,1.000000,,backend=a,", CounterName) + "\n",
			[]string{"line 2", "timestamp"}},
		{"no backend tag", header + ok + "\n" + fmt.Sprintf("%s,%d,1.000000,,scenario=x,", CounterName, t0) + "\n",
			[]string{"line 3", "backend tag"}},
		{"bad count", header + fmt.Sprintf("%s,%d,0.5,,backend=a,", CounterName, t0) + "\n", []string{"line 2", "whole count"}},
		{"bad duration", header + ok + "\n" + fmt.Sprintf("http_req_duration,%d,-1,200,,", t0) + "\n", []string{"line 3", "duration"}},
		{"far too early", header + ok + "\n" + fmt.Sprintf("%s,%d,1,,backend=a,", CounterName, t0-5001) + "\n", []string{"line 3", "before the first"}},
		{"far too late", header + ok + "\n" + fmt.Sprintf("%s,%d,1,,backend=a,", CounterName, t0+int64(30*time.Hour/time.Millisecond)) + "\n",
			[]string{"line 3", "after the first"}},
		{"not a k6 csv", "a,b,c\n1,2,3\n", []string{"line 1", "metric_name"}},
		{"empty", "", []string{"empty"}},
		{"no responses", header + fmt.Sprintf("vus,%d,1,,,", t0) + "\n", []string{"no " + CounterName}},
	} {
		_, err := Summarize(strings.NewReader(tc.csv), SummaryOptions{First: "a", Weight: 50})
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not contain %q", tc.name, err, w)
			}
		}
	}
}

func TestSummaryOptionsValidate(t *testing.T) {
	for _, o := range []SummaryOptions{
		{First: "", Weight: 50},
		{First: ErrorBackend, Weight: 50},
		{First: "a", Weight: -1},
		{First: "a", Weight: 100.5},
		{First: "a", Weight: math.NaN()},
		{First: "a", Weight: 50, Window: 500 * time.Millisecond},
		{First: "a", Weight: 50, Window: 1500*time.Millisecond + 1},
	} {
		if o.Validate() == nil {
			t.Errorf("%+v: accepted", o)
		}
		if _, err := Summarize(strings.NewReader(newCSV().resp(0, "a").String()), o); err == nil {
			t.Errorf("%+v: Summarize accepted", o)
		}
	}
	if err := (SummaryOptions{First: "a", Weight: 0, Window: 1500 * time.Millisecond}).Validate(); err != nil {
		t.Errorf("valid options refused: %v", err)
	}
}

func TestCustomWindow(t *testing.T) {
	c := newCSV().resp(0, "a").resp(1999, "a").resp(2000, "b").resp(3999, "b")
	s := summarize(t, c.String(), SummaryOptions{First: "a", Weight: 50, Window: 2 * time.Second})
	if len(s.Windows) != 2 || s.WindowSeconds != 2 || s.Windows[0].First != 2 || s.Windows[1].Other != 2 {
		t.Errorf("2 s windows: got %+v", s.Windows)
	}
}

func TestGzipInput(t *testing.T) {
	plain := newCSV().resp(0, "a").resp(100, "b").resp(5000, "a").String()
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	_, _ = zw.Write([]byte(plain))
	_ = zw.Close()
	o := SummaryOptions{First: "a", Weight: 50}
	want := summarize(t, plain, o)
	got, err := Summarize(&z, o)
	if err != nil {
		t.Fatalf("gzip: %v", err)
	}
	if got.Requests != want.Requests || len(got.Windows) != len(want.Windows) || got.Share != want.Share {
		t.Errorf("gzip: got %+v, want %+v", got, want)
	}
}

func TestSummaryJSONRoundTrip(t *testing.T) {
	// One window: no interval, NaN in Go, which JSON must carry as null.
	s := summarize(t, newCSV().resp(0, "a").resp(4000, "b").String(), SummaryOptions{First: "a", Weight: 30})
	if !math.IsNaN(float64(s.Accuracy.CILow)) {
		t.Fatalf("precondition: one window should have no interval, got %+v", s.Accuracy)
	}
	out, err := json.Marshal(s)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	if !bytes.Contains(out, []byte(`"ci95_low":null`)) || !bytes.Contains(out, []byte(`"share":0.5`)) {
		t.Errorf("JSON: %s", out)
	}
	var back Summary
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	if !math.IsNaN(float64(back.Accuracy.CILow)) || back.Accuracy.Mean != s.Accuracy.Mean || back.Requests != 2 ||
		back.Backends["b"] != 1 || len(back.Windows) != 1 {
		t.Errorf("round trip: got %+v, want %+v", back, s)
	}
}
