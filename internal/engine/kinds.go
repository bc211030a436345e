package engine

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/cnibench/cnibench/internal/catalog"
)

// Kind is everything cnibench knows of one workload kind outside the engine that measures it:
// the figures it yields, which of them a verdict is about, which engines can measure it, its
// nature, and how its parameters are checked and written in a workload ID. Adding a kind is one
// entry in Kinds plus the engine file that runs it (docs/contributing.md).
type Kind struct {
	// Name is the kind as suites and workload IDs spell it, e.g. "tcp-stream".
	Name string
	// Metrics are the metric names its engines yield, in display order (catalog names them).
	Metrics []string
	// RateMetric is the figure pairs are judged fair on: its throughput or rate.
	RateMetric string
	// VerdictMetrics are the figures its verdict is about, in preference, before the first of
	// catalog.ProgressOrder it has (catalog.VerdictMetric).
	VerdictMetrics []string
	// Engines name the engines that can measure it, in preference: For takes the first that
	// supports the workload.
	Engines []string
	// InPod is a kind that runs inside one pod, with no server and no path between two
	// endpoints.
	InPod bool
	// RoundTrips is a kind whose every transaction waits for the peer's reply: on an idle VM
	// each pays a vCPU wake-up, which a run can keep the vCPUs awake against.
	RoundTrips bool
	// ConnectInLatency is a kind whose latencies include the TCP handshake.
	ConnectInLatency bool

	// validate checks a workload of the kind (Tool empty), naming the first invalid field.
	validate func(Workload) error
	// id writes a valid workload's ID.
	id func(Workload) string
	// parse reads an ID's parameters, the text after "KIND/".
	parse func(params string) (Workload, error)
}

// Kinds lists every workload kind, in display order: streams, then request/response, then
// the in-pod kinds and the gateway's split. The slices are the caller's own.
func Kinds() []Kind {
	out := make([]Kind, 0, len(kindTable()))
	for _, k := range kindTable() {
		out = append(out, k.clone())
	}
	return out
}

// kindTable builds the kinds once and is never written after: tables sort their rows by
// MetricRank and KindRank, which consult a kind on every comparison, and building the table
// each time cost 59 allocations and 4 µs a call.
var kindTable = sync.OnceValue(kindList)

// clone copies k with slices of its own, so that no caller can write into kindTable.
func (k Kind) clone() Kind {
	k.Metrics, k.VerdictMetrics, k.Engines = slices.Clone(k.Metrics), slices.Clone(k.VerdictMetrics), slices.Clone(k.Engines)
	return k
}

// kindList is every kind's entry, in display order.
func kindList() []Kind {
	latency := []string{MetricLatencyMean, MetricLatencyP50, MetricLatencyP90, MetricLatencyP99}
	return []Kind{
		{Name: TCPStream, Metrics: []string{MetricThroughput, MetricRetransmits, MetricSenderCPU, MetricReceiverCPU},
			RateMetric: MetricThroughput, Engines: []string{NameIPerf3, NameNetperf},
			validate: Workload.validateFlow, id: tcpStreamID, parse: parseTCPStreamID},
		// udp-stream offers a fixed rate, which every path that carries it delivers (0.498
		// Gbit/s of 0.5 on every path): what tells paths apart is the loss at that rate, or,
		// for a rate search, the rate it found.
		{Name: UDPStream, Metrics: []string{MetricThroughput, MetricPacketRate, MetricLoss, MetricJitter, MetricSenderCPU, MetricReceiverCPU},
			RateMetric: MetricThroughput, VerdictMetrics: []string{catalog.RFC2544, MetricLoss}, Engines: []string{NameIPerf3},
			validate: Workload.validateFlow, id: udpStreamID, parse: parseUDPStreamID},
		{Name: TCPRR, Metrics: append([]string{MetricTransactionRate}, latency...),
			RateMetric: MetricTransactionRate, Engines: []string{NameSockperf, NameCnibench, NameNetperf}, RoundTrips: true,
			validate: Workload.validateFlow, id: sizeID, parse: parseSizeID(TCPRR)},
		{Name: TCPCRR, Metrics: append([]string{MetricConnectionRate}, latency...),
			RateMetric: MetricConnectionRate, Engines: []string{NameCnibench, NameNetperf}, RoundTrips: true, ConnectInLatency: true,
			validate: Workload.validateFlow, id: sizeID, parse: parseSizeID(TCPCRR)},
		{Name: CPU, Metrics: []string{catalog.CPUOps}, RateMetric: catalog.CPUOps, Engines: []string{NameStressNG}, InPod: true,
			validate: Workload.validateCompute, id: Workload.computeID, parse: parseComputeParams(CPU)},
		{Name: Memory, Metrics: []string{catalog.MemoryRead, catalog.MemoryWrite}, RateMetric: catalog.MemoryRead,
			Engines: []string{NameSysbench}, InPod: true,
			validate: Workload.validateCompute, id: Workload.computeID, parse: parseComputeParams(Memory)},
		{Name: Stream, Metrics: []string{catalog.StreamCopy, catalog.StreamScale, catalog.StreamAdd, catalog.StreamTriad},
			RateMetric: catalog.StreamCopy, Engines: []string{NameStream}, InPod: true,
			validate: Workload.validateStream, id: Workload.computeID, parse: parseComputeParams(Stream)},
		{Name: GatewaySplit,
			Metrics:    append([]string{catalog.SplitAbsError, catalog.SplitError, catalog.SplitShare, catalog.RequestRate, catalog.HTTPErrors}, latency...),
			RateMetric: catalog.RequestRate, Engines: []string{NameK6},
			validate: Workload.validateSplit, id: Workload.splitID, parse: parseSplitID},
	}
}

// KindNames lists the kinds' names in display order.
func KindNames() []string {
	var names []string
	for _, k := range kindTable() {
		names = append(names, k.Name)
	}
	return names
}

// LookupKind returns the kind called name; false for a name no kind has.
func LookupKind(name string) (Kind, bool) {
	if i := KindRank(name); i < len(kindTable()) {
		return kindTable()[i].clone(), true
	}
	return Kind{}, false
}

// KindRank is a kind's place in display order (Kinds); an unknown name comes after every kind.
func KindRank(name string) int {
	kinds := kindTable()
	if i := slices.IndexFunc(kinds, func(k Kind) bool { return k.Name == name }); i >= 0 {
		return i
	}
	return len(kinds)
}

// kindOf is the table's entry of the kind called name (the zero Kind for none), for reading only.
func kindOf(name string) Kind {
	if i := KindRank(name); i < len(kindTable()) {
		return kindTable()[i]
	}
	return Kind{}
}

// MetricsFor returns the metric names a workload kind yields, in display order (nil for an
// unknown kind). The CPU metrics are emitted only when iperf3 reports them, which iperf3 3.12
// always does.
func MetricsFor(kind string) []string { return slices.Clone(kindOf(kind).Metrics) }

// RateMetric is the figure pairs are judged fair on: the workload's throughput or rate ("" for
// an unknown kind).
func RateMetric(kind string) string { return kindOf(kind).RateMetric }

// InPod reports whether a workload kind runs inside one pod, with no server and no path
// between two endpoints.
func InPod(kind string) bool { return kindOf(kind).InPod }

// validateFlow checks a workload between two endpoints (tcp-stream, udp-stream, tcp-rr,
// tcp-crr): parallel streams for tcp-stream only, its kind's message sizes, an offered rate and
// a rate search for udp-stream only.
func (w Workload) validateFlow() error {
	if w.Threads != 0 {
		return fmt.Errorf("threads: expected 0 for %s (only the in-pod kinds %s, %s and %s have threads), got %d", w.Kind, CPU, Memory, Stream, w.Threads)
	}
	if w.Kind == TCPStream {
		if w.Streams < 1 || w.Streams > MaxStreams {
			return fmt.Errorf("streams: expected 1-%d, got %d", MaxStreams, w.Streams)
		}
	} else if w.Streams != 0 && w.Streams != 1 {
		return fmt.Errorf("streams: expected 0 or 1 for %s (only %s has parallel streams), got %d",
			w.Kind, TCPStream, w.Streams)
	}
	if err := w.validateFlowSize(); err != nil {
		return err
	}
	if w.Kind != UDPStream && (w.Search || w.MaxLoss != 0) {
		return fmt.Errorf("maxLoss: expected only for %s (a rate search), got %s", UDPStream, w.Kind)
	}
	if w.MaxLoss < 0 || w.MaxLoss >= 100 || (w.MaxLoss != 0 && !w.Search) {
		return fmt.Errorf("maxLoss: expected a percentage from 0 to below 100, got %g", w.MaxLoss)
	}
	if w.Kind == UDPStream {
		if _, err := parseRate(w.Rate); err != nil {
			return fmt.Errorf("rate: %w", err)
		}
	} else if w.Rate != "" {
		return fmt.Errorf("rate: expected empty for %s (only %s has an offered rate), got %q",
			w.Kind, UDPStream, w.Rate)
	}
	return nil
}

// validateFlowSize checks a flow's message size against its kind's limits.
func (w Workload) validateFlowSize() error {
	switch w.Kind {
	case TCPStream:
		if w.MessageSize < 0 || w.MessageSize > MaxTCPWriteSize {
			return fmt.Errorf("message size: expected 0 (tool default) or 1-%d bytes for %s, got %d",
				MaxTCPWriteSize, w.Kind, w.MessageSize)
		}
	case UDPStream:
		if w.MessageSize < MinUDPSize || w.MessageSize > MaxUDPSize {
			return fmt.Errorf("message size: expected %d-%d bytes for %s, got %d",
				MinUDPSize, MaxUDPSize, w.Kind, w.MessageSize)
		}
	default:
		if w.MessageSize < 1 || w.MessageSize > MaxRRSize {
			return fmt.Errorf("message size: expected 1-%d bytes for %s, got %d",
				MaxRRSize, w.Kind, w.MessageSize)
		}
	}
	return nil
}

// tcpStreamID is "tcp-stream/STREAMS", with "xSIZE" for a write size of its own.
func tcpStreamID(w Workload) string {
	if w.MessageSize == 0 {
		return fmt.Sprintf("%s/%d", w.Kind, w.Streams)
	}
	return fmt.Sprintf("%s/%dx%s", w.Kind, w.Streams, formatSize(w.MessageSize))
}

// parseTCPStreamID reverses tcpStreamID's parameters.
func parseTCPStreamID(params string) (Workload, error) {
	w := Workload{Kind: TCPStream}
	streams, size, hasSize := strings.Cut(params, "x")
	var err error
	if w.Streams, err = parseCount(streams); err != nil {
		return Workload{}, fmt.Errorf("streams: %w", err)
	}
	if hasSize {
		if w.MessageSize, err = parseSize(size); err != nil {
			return Workload{}, fmt.Errorf("message size: %w", err)
		}
	}
	return w, nil
}

// udpStreamID is "udp-stream/SIZE@RATE", with the search's bound and threshold after it:
// "udp-stream/1300B@1G/search0.1%".
func udpStreamID(w Workload) string {
	bps, _ := parseRate(w.Rate) // validated by the caller
	id := fmt.Sprintf("%s/%s@%s", w.Kind, formatSize(w.MessageSize), formatRate(bps))
	if w.Search {
		id += "/search" + strconv.FormatFloat(w.MaxLoss, 'g', -1, 64) + "%"
	}
	return id
}

// parseUDPStreamID reverses udpStreamID's parameters.
func parseUDPStreamID(params string) (Workload, error) {
	w := Workload{Kind: UDPStream, Streams: 1}
	size, rate, hasRate := strings.Cut(params, "@")
	if !hasRate {
		return Workload{}, fmt.Errorf("expected %s/SIZE@RATE, e.g. %q", UDPStream, "udp-stream/1300B@500M")
	}
	var err error
	if w.MessageSize, err = parseSize(size); err != nil {
		return Workload{}, fmt.Errorf("message size: %w", err)
	}
	rate, search, hasSearch := strings.Cut(rate, "/")
	w.Rate = rate
	if hasSearch {
		loss, ok := strings.CutPrefix(search, "search")
		loss, pct := strings.CutSuffix(loss, "%")
		if w.MaxLoss, err = strconv.ParseFloat(loss, 64); !ok || !pct || err != nil {
			return Workload{}, fmt.Errorf("expected /searchLOSS%% after the rate, e.g. %q", "udp-stream/1300B@1G/search0.1%")
		}
		w.Search = true
	}
	return w, nil
}

// sizeID is "KIND/SIZE", the request (and response) size of a request/response kind.
func sizeID(w Workload) string { return fmt.Sprintf("%s/%s", w.Kind, formatSize(w.MessageSize)) }

// parseSizeID returns the parser of sizeID's parameters for kind.
func parseSizeID(kind string) func(string) (Workload, error) {
	return func(params string) (Workload, error) {
		size, err := parseSize(params)
		if err != nil {
			return Workload{}, fmt.Errorf("message size: %w", err)
		}
		return Workload{Kind: kind, Streams: 1, MessageSize: size}, nil
	}
}

// parseComputeParams returns the parser of computeID's parameters for kind.
func parseComputeParams(kind string) func(string) (Workload, error) {
	return func(params string) (Workload, error) { return parseComputeID(kind, params) }
}
