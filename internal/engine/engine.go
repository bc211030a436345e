// Package engine describes, per measurement tool, how cnibench drives it: the server and
// client argv to run inside the tools image, how to parse the client's stdout into
// metrics, and which workloads the tool supports.
//
// Eight engines exist (Engines): iperf3 (tcp-stream, udp-stream), sockperf (tcp-rr), the
// in-house cnibench agent (tcp-crr, and tcp-rr where sockperf cannot run or to cross-check
// it), stress-ng (cpu), sysbench (memory), STREAM (stream), k6 (gateway-split) and netperf
// (tcp-stream with one stream, tcp-rr, tcp-crr; only where a workload names it). Kinds
// lists the workload kinds and what is known of each. For picks the engine for a
// workload; every engine's Parse returns metrics named as listed by MetricsFor, whose
// metadata lives in internal/catalog.
//
// The package only builds argv and parses output: running the commands (in pods, or
// locally in tests) is the caller's job. Callers should Validate a Workload before
// building argv: argv builders assume a valid workload and never fail.
package engine

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/stats"
)

// Workload kinds.
const (
	// TCPStream is bulk TCP throughput from client to server, possibly over parallel streams.
	TCPStream = "tcp-stream"
	// UDPStream is UDP datagrams from client to server at a fixed offered rate.
	UDPStream = "udp-stream"
	// TCPRR is request/response over one long-lived TCP connection (netperf TCP_RR).
	TCPRR = "tcp-rr"
	// TCPCRR is connect/request/response/close, a new TCP connection per transaction
	// (netperf TCP_CRR).
	TCPCRR = "tcp-crr"
	// CPU is compute inside one pod: stress-ng's cpu stressor, no network.
	CPU = "cpu"
	// Memory is memory bandwidth inside one pod: sysbench's sequential reads and writes, no
	// network.
	Memory = "memory"
)

// Workload limits, enforced by Workload.Validate.
const (
	// MaxStreams is the largest tcp-stream parallelism (iperf3's own limit is 128).
	MaxStreams = 128
	// MaxTCPWriteSize is the largest tcp-stream write size (iperf3's limit, 1 MiB).
	MaxTCPWriteSize = 1 << 20
	// MinUDPSize is the smallest udp-stream datagram: iperf3 puts a 16-byte header
	// (sequence number and timestamp) in each datagram and rejects smaller sizes.
	MinUDPSize = 16
	// MaxUDPSize is the largest UDP payload over IPv4 (65535 - 20 - 8), also iperf3's limit.
	MaxUDPSize = 65507
	// MaxRRSize is the largest tcp-rr/tcp-crr request (and response) size.
	MaxRRSize = 65507
	// MaxDuration is the longest sample (iperf3 refuses more than 86400 s).
	MaxDuration = 24 * time.Hour
)

// Workload is one kind of traffic with its parameters.
type Workload struct {
	// Kind names one of Kinds: TCPStream, UDPStream, TCPRR, TCPCRR, CPU, Memory, Stream,
	// GatewaySplit.
	Kind string
	// Streams is the number of parallel streams for tcp-stream (1-MaxStreams). Other
	// kinds use one flow: 0 and 1 are accepted and mean the same.
	Streams int
	// MessageSize in bytes: the tcp-stream write size (0 = tool default, 128 KiB for
	// iperf3), the udp-stream datagram payload size, the tcp-rr/tcp-crr request size
	// (the response has the same size).
	MessageSize int
	// Rate is the udp-stream offered rate in iperf3 -b syntax: a decimal number with an
	// optional K, M, G or T suffix (powers of 1000, bits per second), e.g. "500M".
	// Unlimited ("0") is not allowed. Empty for other kinds.
	Rate string
	// Search makes a udp-stream sample an RFC 2544 throughput search: the highest offered
	// rate up to Rate whose loss is at most MaxLoss percent (0: no loss at all), found by
	// binary search in trials that share the sample's Duration (SearchTrials, TrialDuration).
	Search  bool
	MaxLoss float64
	// Threads is the cpu and memory workers in the pod: 0 starts one per online CPU.
	Threads int
	// Tool names the engine that measures the workload, where more than one can (tcp-rr:
	// sockperf or cnibench); empty picks as For documents.
	Tool string
	// Weight is the percentage a gateway-split route sends to its first backend (1-99).
	Weight int
	// VUs is a gateway-split's virtual users (k6), each looping on one request at a time.
	VUs int
	// Duration is the measured time of one sample, in whole seconds (1 s to 24 h).
	Duration time.Duration
}

// Validate reports the first invalid field. The errors name the field and what is
// expected, e.g. `streams: expected 1-128, got 0`.
func (w Workload) Validate() error {
	if err := w.validateShape(); err != nil {
		return err
	}
	if w.Duration < time.Second || w.Duration > MaxDuration {
		return fmt.Errorf("duration: expected 1s-%s, got %s", MaxDuration, w.Duration)
	}
	if w.Duration%time.Second != 0 {
		return fmt.Errorf("duration: expected whole seconds, got %s", w.Duration)
	}
	if w.Search && w.Duration < MinSearchTrials*time.Second {
		return fmt.Errorf("duration: expected at least %ds for a rate search (%d trials of a second at least), got %s", MinSearchTrials, MinSearchTrials, w.Duration)
	}
	return nil
}

// MinSearchTrials is the fewest trials a rate search makes: the offered maximum, then two
// halvings. MaxSearchTrials is the most: the maximum and seven halvings, to 1/128 of it.
const (
	MinSearchTrials = 3
	MaxSearchTrials = 8
)

// SearchTrials is how many trials a search sample makes: one per second of its Duration, at
// most MaxSearchTrials; a longer Duration lengthens the trials instead (TrialDuration).
func (w Workload) SearchTrials() int {
	return min(MaxSearchTrials, max(MinSearchTrials, int(w.Duration/time.Second)))
}

// TrialDuration is how long each trial of a search offers its rate: the Duration shared by
// the trials, in whole seconds, at least one. Loss comes in bursts, so a short trial passes
// more easily than a long one: RFC 2544 asks for 60 s trials, which a Duration of 8 minutes
// gives.
func (w Workload) TrialDuration() time.Duration {
	return max(time.Second, (w.Duration / time.Duration(w.SearchTrials())).Truncate(time.Second))
}

// Trial is the workload of one search trial: a plain udp-stream at bps for TrialDuration.
func (w Workload) Trial(bps int64) Workload {
	t := w
	t.Search, t.MaxLoss, t.Rate, t.Duration = false, 0, formatRate(bps), w.TrialDuration()
	return t
}

// validateShape validates everything but Duration: the fields ID depends on.
func (w Workload) validateShape() error {
	if w.Tool != "" {
		e, err := ByName(w.Tool)
		if err != nil {
			return fmt.Errorf("tool: %w", err)
		}
		t := w
		t.Tool = ""
		if err := t.validateShape(); err != nil {
			return err
		}
		if !e.Supports(t) {
			return unsupportedTool(e, t)
		}
		return nil
	}
	k := kindOf(w.Kind)
	if k.Name == "" {
		return fmt.Errorf("kind: expected one of %s, got %q", strings.Join(KindNames(), ", "), w.Kind)
	}
	return k.validate(w)
}

// RateBitsPerSec returns the udp-stream offered rate in bits per second.
func (w Workload) RateBitsPerSec() (int64, error) {
	bps, err := parseRate(w.Rate)
	if err != nil {
		return 0, fmt.Errorf("rate: %w", err)
	}
	return bps, nil
}

// ID returns a stable, human-readable identifier of the traffic, unique per distinct
// Kind/Streams/MessageSize/Rate/Threads/Tool (equal values written differently, such as Rate "0.5G"
// and "500M", give the same ID). Duration is deliberately left out: it is how long a
// sample lasts, not what traffic it carries, and is recorded separately. Forms:
//
//	tcp-stream/4          4 streams, tool default write size
//	tcp-stream/1x128K     1 stream, 128 KiB writes
//	udp-stream/1300B@500M 1300-byte datagrams offered at 500 Mbit/s
//	tcp-rr/1B             1-byte request and response
//	tcp-crr/1K            1 KiB request and response, new connection each
//	cpu/1                 one stress-ng cpu worker
//	memory/all            a memory worker per online CPU, default buffer
//	memory/1x16M          one memory worker streaming through 16 MiB
//	gateway-split/40%x100vu  40 % to the first backend, 100 k6 virtual users
//
// Sizes are written in the largest of M (MiB), K (KiB) or B (bytes) that divides them
// exactly; rates in the largest of G, M, K (powers of 1000) or plain bits per second.
// ParseID reverses ID. An invalid workload gets a best-effort ID prefixed "invalid:".
func (w Workload) ID() string {
	if err := w.validateShape(); err != nil {
		return fmt.Sprintf("invalid:%s/%d/%d/%s", w.Kind, w.Streams, w.MessageSize, w.Rate)
	}
	if w.Tool != "" {
		// An explicit tool is part of what was measured: "tcp-rr/64B+cnibench".
		t := w
		t.Tool = ""
		return t.ID() + "+" + w.Tool
	}
	return kindOf(w.Kind).id(w) // validated above
}

// ParseID parses an ID as produced by Workload.ID into a workload with a zero Duration
// (set it before Validate). Streams is 1 for the single-flow kinds.
func ParseID(id string) (Workload, error) {
	if base, tool, ok := strings.Cut(id, "+"); ok {
		w, err := ParseID(base)
		if err != nil {
			return Workload{}, err
		}
		w.Tool = tool
		if err := w.validateShape(); err != nil {
			return Workload{}, fmt.Errorf("workload id %q: %w", id, err)
		}
		return w, nil
	}
	kind, params, ok := strings.Cut(id, "/")
	if !ok || params == "" {
		return Workload{}, fmt.Errorf("workload id %q: expected KIND/PARAMS, e.g. %q", id, "tcp-stream/4")
	}
	w := Workload{Kind: kind, Streams: 1}
	if k := kindOf(kind); k.Name != "" {
		var err error
		if w, err = k.parse(params); err != nil {
			return Workload{}, fmt.Errorf("workload id %q: %w", id, err)
		}
	}
	if err := w.validateShape(); err != nil {
		return Workload{}, fmt.Errorf("workload id %q: %w", id, err)
	}
	w.Rate = rateOrEmpty(w)
	return w, nil
}

// rateOrEmpty returns w's rate in canonical form (udp-stream only).
func rateOrEmpty(w Workload) string {
	if w.Kind != UDPStream {
		return ""
	}
	bps, err := parseRate(w.Rate)
	if err != nil {
		return w.Rate
	}
	return formatRate(bps)
}

// Metrics maps metric names (see MetricsFor and Metric) to values of one sample.
type Metrics map[string]float64

// Engine knows how to run and read one measurement tool.
type Engine interface {
	// Name is the tool name: "iperf3", "sockperf", "cnibench", "netperf"...
	Name() string
	// Supports reports whether the engine can run the (valid) workload.
	Supports(w Workload) bool
	// ServerArgv is the long-running server, run in the foreground in the tools image;
	// it never exits by itself and listens on all addresses of the pod.
	ServerArgv(w Workload, port int) []string
	// ClientArgv runs one sample of Duration and exits. Target is an IP (v4 or v6) or a
	// DNS name, unless the engine implements TargetChecker and rejects it.
	ClientArgv(w Workload, target string, port int) []string
	// Parse turns the client's stdout into metrics. A failure reported by the tool
	// itself is returned as a *ToolError.
	Parse(w Workload, stdout []byte) (Metrics, error)
}

// TargetChecker is implemented by engines whose client accepts only some forms of
// target (sockperf 3.7 takes IPv4 literals only).
type TargetChecker interface {
	// CheckTarget returns an error naming what is expected when the client cannot
	// connect to target as written.
	CheckTarget(target string) error
}

// CheckTarget returns nil if e's client accepts target as ClientArgv's target, and
// otherwise an error saying why (resolve names to IPv4 for sockperf, or use the
// cnibench engine, which accepts any target).
func CheckTarget(e Engine, target string) error {
	if target == "" {
		return errors.New("target: expected an IP address or DNS name, got empty")
	}
	if c, ok := e.(TargetChecker); ok {
		return c.CheckTarget(target)
	}
	return nil
}

// ToolError is a failure the tool reported in its own output (e.g. iperf3's
// {"error": "..."}, sockperf's "ERROR: ..." line). Tools often exit 0 in these cases
// (iperf3 3.12 with -J, sockperf 3.7 always), so Parse is where failures surface.
type ToolError struct {
	Engine  string // engine name
	Message string // the tool's message, verbatim
}

// Error implements error.
func (e *ToolError) Error() string {
	return fmt.Sprintf("%s reported an error: %s", e.Engine, e.Message)
}

// IsServerBusy reports whether err is iperf3's "the server is busy running a test"
// error, which an iperf3 server returns while it still runs (or winds down) a previous
// test: the sample can be retried after a short wait.
func IsServerBusy(err error) bool {
	var te *ToolError
	return errors.As(err, &te) && te.Engine == NameIPerf3 &&
		strings.Contains(te.Message, "server is busy")
}

// Engine names.
const (
	NameIPerf3   = "iperf3"
	NameSockperf = "sockperf"
	NameCnibench = "cnibench"
	NameStressNG = "stress-ng"
)

// Engines returns every engine, for listing: iperf3, sockperf, cnibench, stress-ng, sysbench,
// stream, k6, netperf.
func Engines() []Engine {
	return []Engine{iperf3{}, sockperf{}, cnibench{}, stressNG{}, sysbench{}, stream{}, k6{}, netperf{}}
}

// UnsupportedToolError is a workload whose tool cannot measure it: a suite names the
// workload's tool setting with it.
type UnsupportedToolError struct {
	Tool, Workload string
	// Why is the tool's own reason, where it has one; Measures what it can measure.
	Why, Measures string
}

// Error implements error.
func (e *UnsupportedToolError) Error() string {
	why := ""
	if e.Why != "" {
		why = " (" + e.Why + ")"
	}
	return fmt.Sprintf("tool: %s does not measure %s%s; it measures %s", e.Tool, e.Workload, why, e.Measures)
}

// refuser is an engine that measures only some workloads of its kinds, and says why not.
type refuser interface {
	whyNot(w Workload) string
	measures() string
}

// unsupportedTool is the error of e asked to measure the valid workload w (Tool empty).
func unsupportedTool(e Engine, w Workload) error {
	err := &UnsupportedToolError{Tool: e.Name(), Workload: w.ID()}
	if r, ok := e.(refuser); ok {
		err.Why, err.Measures = r.whyNot(w), r.measures()
		return err
	}
	var kinds []string
	for _, k := range kindTable() {
		if slices.Contains(k.Engines, e.Name()) {
			kinds = append(kinds, k.Name)
		}
	}
	err.Measures = strings.Join(kinds, ", ")
	return err
}

// ByName returns the engine called name, e.g. to run tcp-rr with the cnibench agent
// to cross-check sockperf.
func ByName(name string) (Engine, error) {
	for _, e := range Engines() {
		if e.Name() == name {
			return e, nil
		}
	}
	var names []string
	for _, e := range Engines() {
		names = append(names, e.Name())
	}
	return nil, fmt.Errorf("expected one of %s, got %q", strings.Join(names, ", "), name)
}

// For validates w and returns the engine that measures it: iperf3 for tcp-stream and
// udp-stream, sockperf for tcp-rr, cnibench for tcp-crr. Sockperf cannot send
// messages under 14 bytes, so tcp-rr with smaller messages (such as the classic
// 1-byte tcp-rr/1B) is measured by the cnibench agent instead; the choice depends
// only on the workload, so one workload ID always maps to one engine.
func For(w Workload) (Engine, error) {
	if err := w.Validate(); err != nil {
		return nil, fmt.Errorf("workload %s: %w", w.ID(), err)
	}
	if w.Tool != "" {
		return ByName(w.Tool) // validated: it supports w
	}
	var candidates []Engine
	for _, name := range kindOf(w.Kind).Engines { // validated above
		if e, err := ByName(name); err == nil {
			candidates = append(candidates, e)
		}
	}
	for _, e := range candidates {
		if e.Supports(w) {
			return e, nil
		}
	}
	return nil, fmt.Errorf("workload %s: no engine supports it", w.ID())
}

// DataPorter is implemented by engines whose server takes its data connections on a port of
// their own beside its control port (netperf's netserver): the port after it, which a Service
// and a NetworkPolicy must open too.
type DataPorter interface {
	// DataPort is the data port of a server whose control port is port: port+1.
	DataPort(port int) int
}

// RTTLogger is implemented by engines whose client can log every round trip to a file, which
// `cnibench agent run --rtt-log` turns into a histogram: N pairs' latencies then merge into
// percentiles of all of their transactions.
type RTTLogger interface {
	// WithRTTLog returns the client argv that also writes each round trip to file.
	WithRTTLog(argv []string, file string) []string
}

// HistogramSource is implemented by engines whose client prints a latency histogram itself.
type HistogramSource interface {
	// Histogram returns the round trips (µs) of the client's output, or nil if it has none.
	Histogram(stdout []byte) (*stats.Hist, error)
}

// CarriesIPv6 reports whether e's client can reach an IPv6 server (sockperf 3.7 cannot).
func CarriesIPv6(e Engine) bool { return CheckTarget(e, "fd00::1") == nil }
