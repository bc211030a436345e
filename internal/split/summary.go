package split

import (
	"bufio"
	"compress/gzip"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/stats"
)

// Windowing defaults and limits, enforced by SummaryOptions.Validate.
const (
	// DefaultWindow is the window when SummaryOptions.Window is zero: long enough to hold
	// thousands of responses at any useful load (so a window's share is precise), short
	// enough that a 60 s sample still gives a dozen windows for the interval.
	DefaultWindow = 5 * time.Second
	// MinWindow is the shortest window: below a second a window holds too few responses at
	// low VU counts, and a 24-hour test would list too many of them.
	MinWindow = time.Second
)

// maxBackends bounds the distinct backends a CSV may name, which keeps Summarize's memory
// fixed whatever the file holds. A split has a handful of backend pods; thousands mean the
// bodies are not pod names.
const maxBackends = 4096

// SummaryOptions says which backend the split favours and how to cut the test into windows.
type SummaryOptions struct {
	// First is the name of the backend pod whose weight is Weight. Responses from any other
	// backend (ErrorBackend aside) count as the other side of the split.
	First string
	// Weight is the percentage of requests the route sends to First (0 to 100).
	Weight float64
	// Window is the length of the windows shares are computed over (0: DefaultWindow), in
	// whole milliseconds, at least MinWindow.
	Window time.Duration
}

// Validate returns nil if Summarize can use o.
func (o SummaryOptions) Validate() error {
	if o.First == "" || o.First == ErrorBackend {
		return fmt.Errorf("split summary: expected the first backend's pod name, got %q", o.First)
	}
	if !(o.Weight >= 0 && o.Weight <= 100) {
		return fmt.Errorf("split summary: weight: expected 0 to 100 %%, got %v", o.Weight)
	}
	if o.Window != 0 && (o.Window < MinWindow || o.Window%time.Millisecond != 0) {
		return fmt.Errorf("split summary: window: expected whole milliseconds of at least %s, got %s", MinWindow, o.Window)
	}
	return nil
}

// Float is a figure that may not exist (NaN: a share of no response, an interval of one
// window). JSON has no NaN, so it travels as null and comes back as NaN.
type Float float64

// MarshalJSON writes null for NaN and infinities, the number otherwise.
func (f Float) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(v)
}

// UnmarshalJSON reads null as NaN.
func (f *Float) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*f = Float(math.NaN())
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = Float(v)
	return nil
}

// Summary is what one test's CSV says about the split: small (per-window counts, no
// per-request data) and JSON-serialisable, for `cnibench agent split-summary` to print in
// the load generator's pod and the runner to read back.
type Summary struct {
	// First and Weight repeat SummaryOptions, so the document says what it measured.
	First  string  `json:"first"`
	Weight float64 `json:"weight_pct"`
	// WindowSeconds is the window length.
	WindowSeconds float64 `json:"window_s"`
	// StartUnixMilli is the time of the first response (ms since the epoch): windows start
	// there, so they can be matched with events outside the test, such as a weight change.
	StartUnixMilli int64 `json:"start_unix_ms"`
	// SpanSeconds is the measured span, from the first response to the last.
	SpanSeconds float64 `json:"span_s"`
	// Requests is every response counted (errors included), Errors those credited to
	// ErrorBackend: a status other than 200, a transport error or a body naming no pod.
	Requests int64 `json:"requests"`
	Errors   int64 `json:"errors"`
	// Rate is Requests per second over SpanSeconds (null for a zero span).
	Rate Float `json:"requests_per_s"`
	// Latency is http_req_duration of the successful requests.
	Latency Latency `json:"latency"`
	// Share is First's fraction (0 to 1) of all the responses credited to a backend, the
	// dropped window's included (null when there is none).
	Share Float `json:"share"`
	// Accuracy is how far the windows' shares were from Weight.
	Accuracy Accuracy `json:"accuracy"`
	// Windows are the consecutive windows from StartUnixMilli, the last one possibly shorter.
	Windows []Window `json:"windows"`
	// Dropped is the last window when it covered less than half a window: too few
	// responses to weigh as much as the others. Its responses are in the totals.
	Dropped *Window `json:"dropped_window,omitempty"`
	// Backends counts the responses of each backend (ErrorBackend's are Errors).
	Backends map[string]int64 `json:"backends"`
}

// Latency is the distribution of http_req_duration (ms, from sending the request to the
// last byte of the response, connection set-up included when there is one) over the
// requests answered 200. Failures are left out: a refused connection's few microseconds
// would make a broken path look fast.
type Latency struct {
	// N is the number of requests measured.
	N int64 `json:"n"`
	// Mean is exact; the percentiles are nearest-rank on a stats.Hist, within 0.5 %.
	Mean Float `json:"mean_ms"`
	P50  Float `json:"p50_ms"`
	P90  Float `json:"p90_ms"`
	P99  Float `json:"p99_ms"`
	Max  Float `json:"max_ms"`
}

// Accuracy describes the windows' split accuracy, share - Weight/100 (so -0.02 means First
// got 2 points less than its weight), over the windows that have a share.
type Accuracy struct {
	// N is the number of windows averaged.
	N int `json:"n"`
	// Mean is their mean; CILow and CIHigh bound its 95 % confidence interval (null below
	// two windows), by the method Interval names (stats.Summary.Interval). The windows are
	// taken as independent, which holds when each request is routed on its own (see
	// ScriptOptions.NoConnectionReuse).
	Mean     Float  `json:"mean"`
	CILow    Float  `json:"ci95_low"`
	CIHigh   Float  `json:"ci95_high"`
	Interval string `json:"interval,omitempty"`
	// MeanAbs is the mean absolute deviation from the weight: unlike Mean, windows too high
	// and too low do not cancel out.
	MeanAbs Float `json:"mean_abs"`
}

// Window is one window of the test.
type Window struct {
	// StartSeconds is the window's start after Summary.StartUnixMilli; Seconds its length,
	// the window's except for the last, which ends at the last response.
	StartSeconds float64 `json:"start_s"`
	Seconds      float64 `json:"seconds"`
	// First, Other and Errors count the window's responses from First, from the other
	// backends and credited to ErrorBackend.
	First  int64 `json:"first"`
	Other  int64 `json:"other"`
	Errors int64 `json:"errors"`
	// Share is First / (First + Other): null when no backend answered in the window.
	Share Float `json:"share"`
}

// counts is a window under construction.
type counts struct{ first, other, errors int64 }

// columns are the positions of the CSV's columns Summarize reads; status is -1 when the
// test wrote no status tag.
type columns struct{ name, time, value, status, extra int }

// Summarize reads the CSV k6 wrote for Script's test (Argv's output, plain or gzip) in one
// streaming pass and summarises the split. Memory is bounded by the number of windows and
// backends, never by the number of rows.
//
// Requests, errors, shares and windows come from CounterName, one row per response, and the
// latency from http_req_duration; every other row is skipped. Windows are o.Window long and
// start at the first response in the file. k6 writes rows in roughly, not strictly, time
// order (samples of concurrent VUs race to its buffer), so a row up to one window earlier
// than the first response is counted in the first window; one earlier still means a file
// that is not one test's output and is an error. A malformed file gives an error naming its
// line.
func Summarize(r io.Reader, o SummaryOptions) (Summary, error) {
	if err := o.Validate(); err != nil {
		return Summary{}, err
	}
	if o.Window == 0 {
		o.Window = DefaultWindow
	}
	src, closeSrc, err := decompress(r)
	if err != nil {
		return Summary{}, err
	}
	defer closeSrc()
	cr := csv.NewReader(src)
	// One record slice for the whole file: rows are parsed into counters, never kept.
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return Summary{}, errors.New("k6 csv: empty file (k6 wrote no header)")
		}
		return Summary{}, fmt.Errorf("k6 csv: %w", err)
	}
	cols, err := findColumns(header)
	if err != nil {
		return Summary{}, err
	}

	a := newAccumulator(o)
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			// csv.ParseError names the line and column.
			return Summary{}, fmt.Errorf("k6 csv: %w", err)
		}
		line, _ := cr.FieldPos(0)
		switch rec[cols.name] {
		case CounterName:
			err = a.response(rec, cols)
		case durationMetric:
			err = a.latency(rec, cols)
		}
		if err != nil {
			return Summary{}, fmt.Errorf("k6 csv line %d: %w", line, err)
		}
	}
	return a.summary()
}

// decompress returns r itself, or its gzip stream when r starts with gzip's magic bytes:
// k6 compresses its CSV when the file name ends in .gz, which a long test in a pod with
// little disk may want.
func decompress(r io.Reader) (io.Reader, func(), error) {
	br := bufio.NewReaderSize(r, 1<<20)
	magic, err := br.Peek(2)
	if err != nil || magic[0] != 0x1f || magic[1] != 0x8b {
		// A short or failing read is left to the CSV reader, which reports it.
		return br, func() {}, nil
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		return nil, nil, fmt.Errorf("k6 csv: gzip: %w", err)
	}
	return gzipStream{zr}, func() { _ = zr.Close() }, nil
}

// gzipStream says that a read error (a truncated or corrupt file) is the compression's, not
// the CSV's, which the CSV reader passes on without a line.
type gzipStream struct{ r io.Reader }

func (g gzipStream) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("gzip: %w", err)
	}
	return n, err
}

// findColumns locates the columns by name: which system tags k6 writes as columns depends
// on the script's systemTags, so positions are not fixed.
func findColumns(header []string) (columns, error) {
	c := columns{-1, -1, -1, -1, -1}
	for i, h := range header {
		switch h {
		case "metric_name":
			c.name = i
		case "timestamp":
			c.time = i
		case "metric_value":
			c.value = i
		case "status":
			c.status = i
		case "extra_tags":
			c.extra = i
		}
	}
	if c.name < 0 || c.time < 0 || c.value < 0 || c.extra < 0 {
		return c, fmt.Errorf("k6 csv line 1: expected a k6 CSV header with metric_name, timestamp, metric_value and extra_tags, got %q",
			strings.Join(header, ","))
	}
	return c, nil
}

// accumulator holds what Summarize has read so far.
type accumulator struct {
	o        SummaryOptions
	windowMs int64
	// maxIndex is the last window a test within MaxDuration can reach, with an hour to spare
	// for a graceful stop: a later timestamp is corrupt, and would grow windows without end.
	maxIndex int64
	started  bool
	start    int64 // first response, ms since the epoch
	last     int64 // latest response
	windows  []counts
	total    counts
	backends map[string]int64
	hist     *stats.Hist
	latN     int64
}

func newAccumulator(o SummaryOptions) *accumulator {
	w := o.Window.Milliseconds()
	return &accumulator{
		o:        o,
		windowMs: w,
		maxIndex: int64(MaxDuration+time.Hour) / int64(o.Window),
		backends: map[string]int64{},
		hist:     stats.NewHist(),
	}
}

// timestamp parses a row's time, refusing any format other than CSVTimeFormat: seconds would
// make the windows coarse, and micro- or nanoseconds would be misread as distant years.
func timestamp(s string) (int64, error) {
	ms, err := strconv.ParseInt(s, 10, 64)
	// 1e11 ms is 1973, 1e14 ms the year 5138: k6 at a sane clock writes a value in between;
	// seconds fall below, micro- and nanoseconds above.
	if err != nil || ms < 1e11 || ms >= 1e14 {
		return 0, fmt.Errorf("timestamp: expected milliseconds since the epoch (k6 --out csv=...,timeFormat=%s), got %q",
			CSVTimeFormat, s)
	}
	return ms, nil
}

// response counts one CounterName row: one response of the backend in its tag.
func (a *accumulator) response(rec []string, c columns) error {
	ts, err := timestamp(rec[c.time])
	if err != nil {
		return err
	}
	v, err := strconv.ParseFloat(rec[c.value], 64)
	// The script adds 1 per response; accepting any whole count keeps a future script that
	// batches responses readable, and refuses what is not a count.
	if err != nil || v < 1 || v > 1e9 || v != math.Trunc(v) {
		return fmt.Errorf("%s value: expected a whole count >= 1, got %q", CounterName, rec[c.value])
	}
	n := int64(v)
	backend, ok := tag(rec[c.extra], BackendTag)
	if !ok || backend == "" {
		return fmt.Errorf("%s: expected a %s tag in extra_tags, got %q", CounterName, BackendTag, rec[c.extra])
	}

	if !a.started {
		a.started, a.start, a.last = true, ts, ts
	}
	idx := int64(0)
	if off := ts - a.start; off >= 0 {
		idx = off / a.windowMs
	} else if -off > a.windowMs {
		return fmt.Errorf("timestamp %d is %d ms before the first response, more than a window: the rows are not one k6 test's", ts, -off)
	}
	if idx > a.maxIndex {
		return fmt.Errorf("timestamp %d is %s after the first response, more than any test lasts", ts, time.Duration(ts-a.start)*time.Millisecond)
	}
	a.last = max(a.last, ts)
	for int64(len(a.windows)) <= idx {
		a.windows = append(a.windows, counts{})
	}
	w := &a.windows[idx]
	switch backend {
	case ErrorBackend:
		w.errors += n
		a.total.errors += n
		return nil
	case a.o.First:
		w.first += n
		a.total.first += n
	default:
		w.other += n
		a.total.other += n
	}
	if _, seen := a.backends[backend]; !seen && len(a.backends) >= maxBackends {
		return fmt.Errorf("more than %d distinct backends: the response bodies are not pod names", maxBackends)
	}
	a.backends[backend] += n
	return nil
}

// tag returns the value of key in k6's extra_tags column, "k1=v1&k2=v2" (k6 joins tags that
// are not columns this way, without escaping; the script keeps '&' and '=' out of its tag).
func tag(extra, key string) (string, bool) {
	for kv := range strings.SplitSeq(extra, "&") {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// latency records one http_req_duration row of a request answered 200.
func (a *accumulator) latency(rec []string, c columns) error {
	if c.status >= 0 && rec[c.status] != "200" {
		return nil
	}
	ms, err := strconv.ParseFloat(rec[c.value], 64)
	if err != nil || !(ms >= 0) || math.IsInf(ms, 0) {
		return fmt.Errorf("%s value: expected a duration in ms >= 0, got %q", durationMetric, rec[c.value])
	}
	a.latN++
	// stats.Hist holds positive values only; k6 writes 6 decimals, so a zero is a duration
	// below 1 ns, recorded as 1 ns rather than lost.
	return a.hist.Add(max(ms*1000, 1e-3))
}

// summary turns the counts into a Summary.
func (a *accumulator) summary() (Summary, error) {
	if !a.started {
		return Summary{}, fmt.Errorf("k6 csv: no %s rows: not the output of this package's Script, or k6 sent no request", CounterName)
	}
	nan := Float(math.NaN())
	weight := a.o.Weight / 100
	span := a.last - a.start
	s := Summary{
		First:          a.o.First,
		Weight:         a.o.Weight,
		WindowSeconds:  a.o.Window.Seconds(),
		StartUnixMilli: a.start,
		SpanSeconds:    float64(span) / 1000,
		Requests:       a.total.first + a.total.other + a.total.errors,
		Errors:         a.total.errors,
		Rate:           nan,
		Share:          ratio(a.total.first, a.total.first+a.total.other),
		Windows:        []Window{},
		Backends:       a.backends,
		Latency:        Latency{N: a.latN, Mean: nan, P50: nan, P90: nan, P99: nan, Max: nan},
	}
	if span > 0 {
		s.Rate = Float(float64(s.Requests) / s.SpanSeconds)
	}
	if a.latN > 0 {
		s.Latency.Mean = Float(a.hist.Mean() / 1000)
		s.Latency.P50 = Float(a.hist.Quantile(50) / 1000)
		s.Latency.P90 = Float(a.hist.Quantile(90) / 1000)
		s.Latency.P99 = Float(a.hist.Quantile(99) / 1000)
		s.Latency.Max = Float(a.hist.Quantile(100) / 1000)
	}

	var acc []float64
	var absSum float64
	for i, c := range a.windows {
		startMs := int64(i) * a.windowMs
		length := min(a.windowMs, span-startMs)
		w := Window{StartSeconds: float64(startMs) / 1000, Seconds: float64(length) / 1000,
			First: c.first, Other: c.other, Errors: c.errors, Share: ratio(c.first, c.first+c.other)}
		// The last window ends at the last response; under half a window, its share rests on
		// too few responses to count as much as the others in the mean.
		if i == len(a.windows)-1 && 2*length < a.windowMs {
			s.Dropped = &w
			continue
		}
		s.Windows = append(s.Windows, w)
		if !math.IsNaN(float64(w.Share)) {
			d := float64(w.Share) - weight
			acc = append(acc, d)
			absSum += math.Abs(d)
		}
	}
	sum := stats.SummarizeIn(acc, stats.Domain{Lo: -weight, Hi: 1 - weight})
	s.Accuracy = Accuracy{N: sum.N, Mean: Float(sum.Mean), CILow: Float(sum.CILow), CIHigh: Float(sum.CIHigh),
		Interval: sum.Interval, MeanAbs: nan}
	if len(acc) > 0 {
		s.Accuracy.MeanAbs = Float(absSum / float64(len(acc)))
	}
	return s, nil
}

// ratio is num/den, NaN when den is zero.
func ratio(num, den int64) Float {
	if den == 0 {
		return Float(math.NaN())
	}
	return Float(float64(num) / float64(den))
}
