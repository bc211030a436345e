package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// iperf3ConnectTimeoutMs bounds the client's control connection setup (--connect-timeout,
// available since iperf3 3.6), so an unreachable server fails in seconds instead of
// the kernel's SYN retry time of about two minutes.
const iperf3ConnectTimeoutMs = 5000

// iperf3 drives iperf3 (tested with 3.12, Debian 12) for tcp-stream and udp-stream.
//
// The server is `iperf3 -s -p PORT`: foreground, serving one test at a time, listening
// on all addresses (IPv4 and IPv6). A client arriving while a test still runs gets
// "the server is busy running a test. try again later" (see IsServerBusy).
//
// The client runs with -J: one JSON document on stdout. With -J, iperf3 3.12 exits 0
// even when the test fails (connection refused, server busy) and reports the failure
// in the document's "error" field; command-line errors go to stderr with exit 1 and the
// usage text on stdout. Parse handles all three.
type iperf3 struct{}

// Name implements Engine.
func (iperf3) Name() string { return NameIPerf3 }

// Supports implements Engine: tcp-stream and udp-stream.
func (iperf3) Supports(w Workload) bool {
	return (w.Kind == TCPStream || w.Kind == UDPStream) && w.validateShape() == nil
}

// ServerArgv implements Engine.
func (iperf3) ServerArgv(_ Workload, port int) []string {
	return []string{"iperf3", "-s", "-p", strconv.Itoa(port)}
}

// ClientArgv implements Engine:
//
//	tcp-stream: iperf3 -c TARGET -p PORT -t SECONDS -J --connect-timeout 5000 [-P STREAMS] [-l SIZE]
//	udp-stream: iperf3 -c TARGET -p PORT -t SECONDS -J --connect-timeout 5000 -u -b RATE -l SIZE
//
// -P is given only for more than one stream, -l only for a non-default TCP write size.
// RATE is the workload's rate in canonical form (e.g. "0.5G" becomes "500M").
func (iperf3) ClientArgv(w Workload, target string, port int) []string {
	argv := []string{"iperf3", "-c", target, "-p", strconv.Itoa(port),
		"-t", strconv.Itoa(wholeSeconds(w)), "-J",
		"--connect-timeout", strconv.Itoa(iperf3ConnectTimeoutMs)}
	switch w.Kind {
	case TCPStream:
		if w.Streams > 1 {
			argv = append(argv, "-P", strconv.Itoa(w.Streams))
		}
		if w.MessageSize > 0 {
			argv = append(argv, "-l", strconv.Itoa(w.MessageSize))
		}
	case UDPStream:
		argv = append(argv, "-u", "-b", rateOrEmpty(w), "-l", strconv.Itoa(w.MessageSize))
	}
	return argv
}

// wholeSeconds is w.Duration in whole seconds, at least 1.
func wholeSeconds(w Workload) int {
	s := int(w.Duration.Seconds())
	if s < 1 {
		return 1
	}
	return s
}

// iperf3Result is the part of iperf3's -J output Parse reads.
type iperf3Result struct {
	Start struct {
		TestStart struct {
			Protocol string `json:"protocol"`
			Reverse  int    `json:"reverse"`
		} `json:"test_start"`
	} `json:"start"`
	End struct {
		// TCP: sum_sent (sender side, with retransmits) and sum_received (receiver).
		// UDP (3.12): sum_sent, sum_received, and sum, which mixes the sender's bytes and
		// rate with the receiver's loss and jitter.
		Sum         *iperf3Sum        `json:"sum"`
		SumSent     *iperf3Sum        `json:"sum_sent"`
		SumReceived *iperf3Sum        `json:"sum_received"`
		CPU         *iperf3CPUPercent `json:"cpu_utilization_percent"`
	} `json:"end"`
	Error string `json:"error"`
}

// iperf3Sum is one of the end.sum* objects.
type iperf3Sum struct {
	Seconds       float64  `json:"seconds"`
	Bytes         float64  `json:"bytes"`
	BitsPerSecond float64  `json:"bits_per_second"`
	Retransmits   *float64 `json:"retransmits"` // TCP sender only, absent off Linux
	JitterMs      *float64 `json:"jitter_ms"`   // UDP
	LostPackets   *float64 `json:"lost_packets"`
	Packets       *float64 `json:"packets"` // UDP: datagrams sent (per sequence numbers)
	LostPercent   *float64 `json:"lost_percent"`
}

// iperf3CPUPercent is end.cpu_utilization_percent: host is the client process, remote
// the server process, each (user+system CPU time) / wall time * 100.
type iperf3CPUPercent struct {
	HostTotal   *float64 `json:"host_total"`
	RemoteTotal *float64 `json:"remote_total"`
}

// Parse implements Engine. TCP: throughput from end.sum_received, retransmits from
// end.sum_sent. UDP: throughput, loss, jitter and packets from end.sum_received (in
// 3.12 end.sum carries the sender's byte count, so its bits_per_second is the offered
// rate, not goodput; end.sum is used only when sum_received is absent, corrected for
// loss). packets_per_s is (packets - lost_packets) / seconds: iperf3's "packets" is the
// number sent, as the receiver infers from sequence numbers. CPU: host_total is the
// client (the sender, as cnibench never uses -R) and remote_total the server.
func (iperf3) Parse(w Workload, stdout []byte) (Metrics, error) {
	trimmed := bytes.TrimSpace(stdout)
	if len(trimmed) == 0 {
		return nil, errors.New("iperf3 output: empty stdout (a command-line error goes to stderr)")
	}
	if trimmed[0] != '{' {
		return nil, fmt.Errorf("iperf3 output: expected a JSON document (-J), got %q", excerpt(trimmed))
	}
	var r iperf3Result
	if err := json.Unmarshal(trimmed, &r); err != nil {
		return nil, fmt.Errorf("iperf3 output: decoding JSON: %w", jsonPlace(err))
	}
	if r.Error != "" {
		return nil, &ToolError{Engine: NameIPerf3, Message: r.Error}
	}
	wantProto := "TCP"
	if w.Kind == UDPStream {
		wantProto = "UDP"
	}
	if p := r.Start.TestStart.Protocol; p != wantProto {
		return nil, fmt.Errorf("iperf3 output: start.test_start.protocol: expected %s for %s, got %q", wantProto, w.Kind, p)
	}
	m := Metrics{}
	var err error
	if w.Kind == UDPStream {
		err = parseIPerf3UDP(&r, m)
	} else {
		err = parseIPerf3TCP(&r, m)
	}
	if err != nil {
		return nil, err
	}
	if cpu := r.End.CPU; cpu != nil {
		sender, receiver := cpu.HostTotal, cpu.RemoteTotal
		if r.Start.TestStart.Reverse != 0 {
			sender, receiver = receiver, sender
		}
		if sender != nil {
			m[MetricSenderCPU] = *sender
		}
		if receiver != nil {
			m[MetricReceiverCPU] = *receiver
		}
	}
	return finite("iperf3 output", m)
}

// parseIPerf3TCP fills the tcp-stream metrics.
func parseIPerf3TCP(r *iperf3Result, m Metrics) error {
	recv := r.End.SumReceived
	if recv == nil || recv.Seconds <= 0 {
		return errors.New("iperf3 output: end.sum_received: expected the receiver's totals with seconds > 0, got none")
	}
	m[MetricThroughput] = recv.BitsPerSecond / 1e9
	if sent := r.End.SumSent; sent != nil && sent.Retransmits != nil {
		m[MetricRetransmits] = *sent.Retransmits
	}
	return nil
}

// parseIPerf3UDP fills the udp-stream metrics.
func parseIPerf3UDP(r *iperf3Result, m Metrics) error {
	s, field := r.End.SumReceived, "end.sum_received"
	if s == nil {
		s, field = r.End.Sum, "end.sum"
	}
	if s == nil || s.Seconds <= 0 {
		return errors.New("iperf3 output: end.sum_received: expected the receiver's UDP totals with seconds > 0, got none")
	}
	if s.Packets == nil || s.LostPackets == nil || s.LostPercent == nil || s.JitterMs == nil {
		return fmt.Errorf("iperf3 output: %s: expected packets, lost_packets, lost_percent and jitter_ms", field)
	}
	if *s.Packets <= 0 {
		return fmt.Errorf("iperf3 output: %s.packets: expected datagrams sent > 0, got %v", field, *s.Packets)
	}
	received := *s.Packets - *s.LostPackets
	if received < 0 { // duplicates can make iperf3's loss estimate negative or excessive
		received = 0
	}
	goodput := s.BitsPerSecond
	if field == "end.sum" {
		goodput *= received / *s.Packets
	}
	m[MetricThroughput] = goodput / 1e9
	m[MetricPacketRate] = received / s.Seconds
	m[MetricLoss] = *s.LostPercent
	m[MetricJitter] = *s.JitterMs
	return nil
}

// excerpt returns the start of b for error messages.
func excerpt(b []byte) string {
	const limit = 120
	if len(b) > limit {
		return string(b[:limit]) + "..."
	}
	return string(b)
}

// jsonPlace adds the byte offset to a JSON decoding error, whose text does not say where the
// document went wrong.
func jsonPlace(err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Errorf("%w (at byte %d)", err, syntax.Offset)
	case errors.As(err, &typ):
		return fmt.Errorf("%w (at byte %d)", err, typ.Offset)
	}
	return err
}
