package engine

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// NameNetperf is the netperf engine's name, as a suite's `tool:` spells it.
const NameNetperf = "netperf"

// netperf drives netperf 2.7.0 (Debian 12's package, from its non-free component) for
// tcp-stream with one stream and tcp-rr: the tool two of the reference studies measured with
// (TCP_STREAM, TCP_RR, TCP_CRR), for figures set beside theirs. Its TCP_CRR is refused (see
// netperfCRRWhy); the argv and the parsing of its output stay, for when it can be trusted.
//
// The server is `netserver -D -p PORT`: foreground, listening on all addresses of both
// families, a child per test. Its control connection uses PORT; each test's data
// connection uses the next port (DataPort), fixed with the test-specific `-P ,PORT+1` so
// that a Service or a NetworkPolicy can name it (netperf would otherwise pick one at random).
//
// The client runs one test of -l seconds with -P0 (no banner) and omni output selectors
// (-k), which print KEY=VALUE lines. Its semantics, which its figures carry:
//   - TCP_STREAM: one connection, the client sends for -l seconds (writes of -m bytes, default
//     the socket buffer's size); THROUGHPUT is bytes over the test's elapsed time, which ends
//     once the receiver has read everything, so it is the receiver's rate.
//   - TCP_RR: one connection, one transaction in flight: a request of -r bytes, then a response
//     of as many; TRANSACTION_RATE is transactions per second, latencies are each
//     transaction's round trip in µs, P50/P90/P99 from netperf's own per-transaction
//     timings (-j), in whole microseconds.
//   - TCP_CRR: a new connection per transaction (connect, request, response, close): the
//     latencies include the handshake, and the server closes first, so TIME_WAIT stays on its
//     data port (netserver rebinds it with SO_REUSEADDR).
//
// netperf writes its failures to stdout as text and exits 255 ("establish control: are you
// sure there is a netserver listening on ..."): Parse returns them as a *ToolError.
// udp-stream is not offered: Debian builds netperf without --enable-intervals, so it cannot
// pace datagrams at an offered rate ("Packet rate control is not compiled in"), and a
// udp-stream sample is loss at a fixed rate.
type netperf struct{}

// Name implements Engine.
func (netperf) Name() string { return NameNetperf }

// Supports implements Engine: tcp-stream with one stream and tcp-rr.
func (n netperf) Supports(w Workload) bool {
	return w.validateShape() == nil && n.whyNot(w) == ""
}

// whyNot says why netperf cannot measure a valid workload, "" when it can.
func (n netperf) whyNot(w Workload) string {
	switch w.Kind {
	case TCPStream:
		if w.Streams > 1 {
			return "netperf runs one connection per process; use iperf3 for parallel streams"
		}
		return ""
	case TCPRR:
		return ""
	case TCPCRR:
		return netperfCRRWhy
	case UDPStream:
		return "Debian's netperf 2.7.0 is built without --enable-intervals, so it cannot pace datagrams at udp-stream's offered rate; use iperf3"
	}
	return "netperf measures " + n.measures()
}

// measures lists what the engine measures, for errors.
func (netperf) measures() string {
	return "tcp-stream with 1 stream and tcp-rr"
}

// netperfCRRWhy is why netperf's TCP_CRR is refused: on a local cluster some of its samples
// fell to a few connections a second while the in-house client's, interleaved with them on
// the same path, measured thousands, so its figure can say more of the lab's ports than of
// the datapath.
const netperfCRRWhy = "netperf's TCP_CRR measured 4.5 and 5.5 connections/s in 2 of 6 samples on a local cluster, beside 2300-3500 in the others and the in-house client's thousands; use tool: cnibench"

// DataPort is the port of netserver's data connections: the one after its control port.
func (netperf) DataPort(port int) int { return port + 1 }

// ServerClosesFirst reports that netserver may close first (TCP_CRR), leaving TIME_WAIT on its
// data port; it is true for every workload, since one netserver serves them all.
func (netperf) ServerClosesFirst(Workload) bool { return true }

// ServerArgv implements Engine.
func (netperf) ServerArgv(_ Workload, port int) []string {
	return []string{"netserver", "-D", "-p", strconv.Itoa(port)}
}

// netperfTest is the netperf test of a kind and its output selectors.
func netperfTest(kind string) (test, selectors string) {
	const rr = "TRANSACTION_RATE,MEAN_LATENCY,P50_LATENCY,P90_LATENCY,P99_LATENCY,ELAPSED_TIME,PROTOCOL,REQUEST_SIZE,RESPONSE_SIZE"
	switch kind {
	case TCPRR:
		return "TCP_RR", rr
	case TCPCRR:
		return "TCP_CRR", rr
	}
	return "TCP_STREAM", "THROUGHPUT,THROUGHPUT_UNITS,ELAPSED_TIME,PROTOCOL,LOCAL_SEND_SIZE,LOCAL_TRANSPORT_RETRANS"
}

// ClientArgv implements Engine:
//
//	tcp-stream: netperf -H TARGET -p PORT -t TCP_STREAM -l SECONDS -P0 -j -- -P ,PORT+1 [-m SIZE] -k SELECTORS
//	tcp-rr:     netperf -H TARGET -p PORT -t TCP_RR -l SECONDS -P0 -j -- -P ,PORT+1 -r SIZE,SIZE -k SELECTORS
//	tcp-crr:    the same with -t TCP_CRR
//
// -j keeps the per-transaction timings the latency percentiles come from; -m only for a
// write size of the workload's own.
func (n netperf) ClientArgv(w Workload, target string, port int) []string {
	test, selectors := netperfTest(w.Kind)
	argv := []string{"netperf", "-H", target, "-p", strconv.Itoa(port), "-t", test,
		"-l", strconv.Itoa(wholeSeconds(w)), "-P0", "-j", "--", "-P", "," + strconv.Itoa(n.DataPort(port))}
	switch {
	case w.Kind == TCPStream && w.MessageSize > 0:
		argv = append(argv, "-m", strconv.Itoa(w.MessageSize))
	case w.Kind != TCPStream:
		argv = append(argv, "-r", strconv.Itoa(w.MessageSize)+","+strconv.Itoa(w.MessageSize))
	}
	return append(argv, "-k", selectors)
}

// Parse implements Engine. tcp-stream: throughput in Gbit/s from THROUGHPUT and its
// THROUGHPUT_UNITS, retransmits from LOCAL_TRANSPORT_RETRANS (the sender's, from TCP_INFO).
// tcp-rr and tcp-crr: TRANSACTION_RATE is transactions_per_s (tcp-rr) or connections_per_s
// (tcp-crr, a connection per transaction), and the latencies are in µs.
func (netperf) Parse(w Workload, stdout []byte) (Metrics, error) {
	values, other := netperfValues(stdout)
	if len(values) == 0 {
		if len(other) > 0 {
			return nil, &ToolError{Engine: NameNetperf, Message: strings.Join(other, "; ")}
		}
		return nil, errors.New("netperf output: empty stdout")
	}
	if p := values["PROTOCOL"]; p != "TCP" {
		return nil, fmt.Errorf("netperf output: PROTOCOL: expected TCP for %s, got %q", w.Kind, p)
	}
	if w.Kind == TCPStream {
		m, err := parseNetperfStream(values)
		if err != nil {
			return nil, err
		}
		return finite("netperf output", m)
	}
	rate := MetricTransactionRate
	if w.Kind == TCPCRR {
		rate = MetricConnectionRate
	}
	m := Metrics{}
	for _, f := range []struct{ key, metric string }{
		{"TRANSACTION_RATE", rate}, {"MEAN_LATENCY", MetricLatencyMean},
		{"P50_LATENCY", MetricLatencyP50}, {"P90_LATENCY", MetricLatencyP90}, {"P99_LATENCY", MetricLatencyP99},
	} {
		v, err := netperfNumber(values, f.key)
		if err != nil {
			return nil, err
		}
		m[f.metric] = v
	}
	if !(m[rate] > 0) {
		return nil, fmt.Errorf("netperf output: TRANSACTION_RATE: expected > 0, got %v", m[rate])
	}
	return finite("netperf output", m)
}

// parseNetperfStream reads a TCP_STREAM test's selectors.
func parseNetperfStream(values map[string]string) (Metrics, error) {
	tput, err := netperfNumber(values, "THROUGHPUT")
	if err != nil {
		return nil, err
	}
	// netperf's -f: 10^N bits/s for the default and for k, m and g.
	scale := map[string]float64{"10^3bits/s": 1e-6, "10^6bits/s": 1e-3, "10^9bits/s": 1}[values["THROUGHPUT_UNITS"]]
	if scale == 0 {
		return nil, fmt.Errorf("netperf output: THROUGHPUT_UNITS: expected 10^3bits/s, 10^6bits/s or 10^9bits/s, got %q", values["THROUGHPUT_UNITS"])
	}
	if !(tput > 0) {
		return nil, fmt.Errorf("netperf output: THROUGHPUT: expected > 0, got %v", tput)
	}
	m := Metrics{MetricThroughput: tput * scale}
	// Where TCP_INFO is not read netperf prints -1: no figure then.
	if r, err := netperfNumber(values, "LOCAL_TRANSPORT_RETRANS"); err == nil && r >= 0 {
		m[MetricRetransmits] = r
	}
	return m, nil
}

// netperfValues splits netperf's -k output into its KEY=VALUE pairs and its other lines
// (messages).
func netperfValues(stdout []byte) (values map[string]string, other []string) {
	values = map[string]string{}
	for _, line := range strings.Split(string(stdout), "\n") {
		line = strings.TrimSpace(line)
		key, value, ok := strings.Cut(line, "=")
		switch {
		case line == "":
		case ok && key != "" && strings.ToUpper(key) == key && !strings.ContainsAny(key, " \t"):
			values[key] = value
		default:
			other = append(other, line)
		}
	}
	return values, other
}

// netperfNumber is the selector key's value as a number.
func netperfNumber(values map[string]string, key string) (float64, error) {
	s, ok := values[key]
	if !ok {
		return 0, fmt.Errorf("netperf output: expected %s=..., found none", key)
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("netperf output: %s: %w", key, err)
	}
	return v, nil
}
