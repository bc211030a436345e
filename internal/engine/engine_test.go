package engine

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	ok := []Workload{
		{Kind: TCPStream, Streams: 1, Duration: time.Second},
		{Kind: TCPStream, Streams: 128, MessageSize: 1 << 20, Duration: 24 * time.Hour},
		{Kind: UDPStream, MessageSize: 16, Rate: "1K", Duration: 5 * time.Second},
		{Kind: UDPStream, Streams: 1, MessageSize: 65507, Rate: "0.5G", Duration: 5 * time.Second},
		{Kind: TCPRR, MessageSize: 1, Duration: 10 * time.Second},
		{Kind: TCPCRR, Streams: 1, MessageSize: 65507, Duration: time.Minute},
	}
	for _, w := range ok {
		if err := w.Validate(); err != nil {
			t.Errorf("%+v: unexpected error %v", w, err)
		}
	}
	bad := []struct {
		w    Workload
		want string
	}{
		{Workload{Kind: "tcp", Streams: 1, Duration: time.Second}, `kind: expected one of tcp-stream, udp-stream, tcp-rr, tcp-crr, cpu, memory, stream, gateway-split, got "tcp"`},
		{Workload{Kind: TCPStream, Duration: time.Second}, "streams: expected 1-128, got 0"},
		{Workload{Kind: TCPStream, Streams: 129, Duration: time.Second}, "streams: expected 1-128, got 129"},
		{Workload{Kind: UDPStream, Streams: 2, MessageSize: 1300, Rate: "1M", Duration: time.Second}, "streams: expected 0 or 1 for udp-stream"},
		{Workload{Kind: TCPStream, Streams: 1, MessageSize: -1, Duration: time.Second}, "message size: expected 0 (tool default) or 1-1048576 bytes for tcp-stream, got -1"},
		{Workload{Kind: TCPStream, Streams: 1, MessageSize: 1<<20 + 1, Duration: time.Second}, "message size: expected 0 (tool default) or 1-1048576"},
		{Workload{Kind: UDPStream, MessageSize: 15, Rate: "1M", Duration: time.Second}, "message size: expected 16-65507 bytes for udp-stream, got 15"},
		{Workload{Kind: UDPStream, MessageSize: 65508, Rate: "1M", Duration: time.Second}, "message size: expected 16-65507"},
		{Workload{Kind: TCPRR, Duration: time.Second}, "message size: expected 1-65507 bytes for tcp-rr, got 0"},
		{Workload{Kind: TCPCRR, MessageSize: 70000, Duration: time.Second}, "message size: expected 1-65507 bytes for tcp-crr, got 70000"},
		{Workload{Kind: UDPStream, MessageSize: 1300, Duration: time.Second}, "rate: expected a bit rate"},
		{Workload{Kind: UDPStream, MessageSize: 1300, Rate: "0", Duration: time.Second}, "rate: expected a positive rate (unlimited UDP is not allowed)"},
		{Workload{Kind: UDPStream, MessageSize: 1300, Rate: "100M/10", Duration: time.Second}, "rate: expected a decimal number"},
		{Workload{Kind: UDPStream, MessageSize: 1300, Rate: "1e9", Duration: time.Second}, "rate: expected a decimal number"},
		{Workload{Kind: UDPStream, MessageSize: 1300, Rate: "-5M", Duration: time.Second}, "rate: expected a decimal number"},
		{Workload{Kind: UDPStream, MessageSize: 1300, Rate: "fastG", Duration: time.Second}, "rate: expected a decimal number"},
		{Workload{Kind: TCPRR, MessageSize: 1, Rate: "1M", Duration: time.Second}, `rate: expected empty for tcp-rr`},
		{Workload{Kind: TCPRR, MessageSize: 1}, "duration: expected 1s-24h0m0s, got 0s"},
		{Workload{Kind: TCPRR, MessageSize: 1, Duration: 25 * time.Hour}, "duration: expected 1s-24h0m0s, got 25h0m0s"},
		{Workload{Kind: TCPRR, MessageSize: 1, Duration: 1500 * time.Millisecond}, "duration: expected whole seconds, got 1.5s"},
	}
	for _, c := range bad {
		err := c.w.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got error %v, want it to contain %q", c.w, err, c.want)
		}
	}
}

func TestIDAndParseID(t *testing.T) {
	cases := []struct {
		w  Workload
		id string
	}{
		{Workload{Kind: TCPStream, Streams: 1, MessageSize: 128 << 10}, "tcp-stream/1x128K"},
		{Workload{Kind: TCPStream, Streams: 4}, "tcp-stream/4"},
		{Workload{Kind: TCPStream, Streams: 2, MessageSize: 1 << 20}, "tcp-stream/2x1M"},
		{Workload{Kind: TCPStream, Streams: 1, MessageSize: 1000}, "tcp-stream/1x1000B"},
		{Workload{Kind: UDPStream, Streams: 1, MessageSize: 1300, Rate: "500M"}, "udp-stream/1300B@500M"},
		{Workload{Kind: UDPStream, Streams: 1, MessageSize: 1024, Rate: "1G"}, "udp-stream/1K@1G"},
		{Workload{Kind: UDPStream, Streams: 1, MessageSize: 16, Rate: "1500"}, "udp-stream/16B@1500"},
		{Workload{Kind: TCPRR, Streams: 1, MessageSize: 1}, "tcp-rr/1B"},
		{Workload{Kind: TCPCRR, Streams: 1, MessageSize: 1}, "tcp-crr/1B"},
		{Workload{Kind: TCPCRR, Streams: 1, MessageSize: 4096}, "tcp-crr/4K"},
	}
	for _, c := range cases {
		if got := c.w.ID(); got != c.id {
			t.Errorf("%+v: ID %q, want %q", c.w, got, c.id)
		}
		back, err := ParseID(c.id)
		if err != nil {
			t.Errorf("ParseID(%q): %v", c.id, err)
			continue
		}
		if back != c.w {
			t.Errorf("ParseID(%q) = %+v, want %+v", c.id, back, c.w)
		}
	}
	// Equal parameters written differently share an ID; Duration and Streams 0/1 do not matter.
	same := []Workload{
		{Kind: UDPStream, MessageSize: 1300, Rate: "0.5G", Duration: time.Second},
		{Kind: UDPStream, Streams: 1, MessageSize: 1300, Rate: "500m", Duration: 9 * time.Second},
		{Kind: UDPStream, MessageSize: 1300, Rate: "500000K"},
		{Kind: UDPStream, MessageSize: 1300, Rate: "500000000"},
	}
	for _, w := range same {
		if got := w.ID(); got != "udp-stream/1300B@500M" {
			t.Errorf("%+v: ID %q, want udp-stream/1300B@500M", w, got)
		}
	}
	if id := (Workload{Kind: TCPStream}).ID(); !strings.HasPrefix(id, "invalid:") {
		t.Errorf("invalid workload ID %q, want prefix invalid:", id)
	}
	for _, bad := range []string{"", "tcp-stream", "tcp-stream/", "tcp-stream/0", "tcp-stream/4x", "tcp-stream/x4K",
		"udp-stream/1300B", "udp-stream/1300B@0", "tcp-rr/0B", "tcp-rr/1Q", "tcp-rr/-1B", "sctp/1B", "tcp-crr/99999999999M"} {
		if w, err := ParseID(bad); err == nil {
			t.Errorf("ParseID(%q) = %+v, want an error", bad, w)
		}
	}
}

func TestFor(t *testing.T) {
	d := 3 * time.Second
	cases := []struct {
		w    Workload
		want string
	}{
		{Workload{Kind: TCPStream, Streams: 8, Duration: d}, NameIPerf3},
		{Workload{Kind: UDPStream, MessageSize: 1300, Rate: "1G", Duration: d}, NameIPerf3},
		{Workload{Kind: TCPRR, MessageSize: 64, Duration: d}, NameSockperf},
		{Workload{Kind: TCPRR, MessageSize: 14, Duration: d}, NameSockperf},
		{Workload{Kind: TCPRR, MessageSize: 13, Duration: d}, NameCnibench},
		{Workload{Kind: TCPRR, MessageSize: 1, Duration: d}, NameCnibench},
		{Workload{Kind: TCPCRR, MessageSize: 1, Duration: d}, NameCnibench},
	}
	for _, c := range cases {
		e, err := For(c.w)
		if err != nil {
			t.Errorf("For(%s): %v", c.w.ID(), err)
			continue
		}
		if e.Name() != c.want {
			t.Errorf("For(%s) = %s, want %s", c.w.ID(), e.Name(), c.want)
		}
		if !e.Supports(c.w) {
			t.Errorf("For(%s) = %s, which does not support it", c.w.ID(), e.Name())
		}
	}
	if _, err := For(Workload{Kind: TCPStream, Duration: d}); err == nil || !strings.Contains(err.Error(), "streams: expected 1-128, got 0") {
		t.Errorf("For(invalid) error %v, want the streams validation error", err)
	}
	// An explicit tool overrides the choice, is part of the ID, and must support the workload.
	rr := Workload{Kind: TCPRR, MessageSize: 64, Duration: d, Tool: NameCnibench}
	if e, err := For(rr); err != nil || e.Name() != NameCnibench || rr.ID() != "tcp-rr/64B+cnibench" {
		t.Errorf("For(%s) = %v, %v", rr.ID(), e, err)
	}
	if back, err := ParseID(rr.ID()); err != nil || back.Tool != NameCnibench || back.ID() != rr.ID() {
		t.Errorf("ParseID(%s) = %+v, %v", rr.ID(), back, err)
	}
	rr.Tool = NameIPerf3
	if err := rr.Validate(); err == nil || err.Error() != "tool: iperf3 does not measure tcp-rr/64B; it measures tcp-stream, udp-stream" {
		t.Errorf("tcp-rr with iperf3: %v", err)
	}
	// netperf says why it cannot, and what it can.
	udp := Workload{Kind: UDPStream, MessageSize: 1300, Rate: "500M", Duration: d, Tool: NameNetperf}
	if err := udp.Validate(); err == nil || !strings.Contains(err.Error(), "tool: netperf does not measure udp-stream/1300B@500M (Debian's netperf 2.7.0 is built without --enable-intervals") ||
		!strings.HasSuffix(err.Error(), "; it measures tcp-stream with 1 stream and tcp-rr") {
		t.Errorf("udp-stream with netperf: %v", err)
	}
	if err := (Workload{Kind: TCPCRR, MessageSize: 64, Duration: d, Tool: NameNetperf}).Validate(); err == nil || !strings.Contains(err.Error(), "netperf's TCP_CRR measured 4.5 and 5.5 connections/s") {
		t.Errorf("tcp-crr with netperf: %v", err)
	}
	var ute *UnsupportedToolError
	if err := (Workload{Kind: TCPStream, Streams: 4, Duration: d, Tool: NameNetperf}).Validate(); !errors.As(err, &ute) || !strings.Contains(ute.Why, "use iperf3 for parallel streams") {
		t.Errorf("tcp-stream/4 with netperf: %v", err)
	}
	if err := (Workload{Kind: CPU, Threads: 1, Duration: d, Tool: NameNetperf}).Validate(); !errors.As(err, &ute) || ute.Why != "netperf measures tcp-stream with 1 stream and tcp-rr" {
		t.Errorf("cpu with netperf: %v", err)
	}
}

func TestSupportsMatrix(t *testing.T) {
	d := time.Second
	ws := map[string]Workload{
		"tcp-stream":   {Kind: TCPStream, Streams: 1, Duration: d},
		"tcp-stream/4": {Kind: TCPStream, Streams: 4, Duration: d},
		"udp-stream":   {Kind: UDPStream, MessageSize: 1300, Rate: "1M", Duration: d},
		"tcp-rr/1":     {Kind: TCPRR, MessageSize: 1, Duration: d},
		"tcp-rr/64":    {Kind: TCPRR, MessageSize: 64, Duration: d},
		"tcp-crr":      {Kind: TCPCRR, MessageSize: 64, Duration: d},
		"cpu":          {Kind: CPU, Threads: 1, Duration: d},
		"memory":       {Kind: Memory, Duration: d},
		"stream":       {Kind: Stream, Duration: d},
		"split":        {Kind: GatewaySplit, Weight: 40, VUs: 10, Duration: d},
	}
	want := map[string]map[string]bool{
		NameIPerf3:   {"tcp-stream": true, "tcp-stream/4": true, "udp-stream": true},
		NameSockperf: {"tcp-rr/64": true},
		NameCnibench: {"tcp-rr/1": true, "tcp-rr/64": true, "tcp-crr": true},
		NameStressNG: {"cpu": true},
		NameSysbench: {"memory": true},
		NameStream:   {"stream": true},
		NameK6:       {"split": true},
		NameNetperf:  {"tcp-stream": true, "tcp-rr/1": true, "tcp-rr/64": true},
	}
	if n := len(Engines()); n != 8 {
		t.Fatalf("Engines() has %d engines, want 8", n)
	}
	for _, e := range Engines() {
		for name, w := range ws {
			if got := e.Supports(w); got != want[e.Name()][name] {
				t.Errorf("%s.Supports(%s) = %v, want %v", e.Name(), name, got, !got)
			}
		}
		byName, err := ByName(e.Name())
		if err != nil || byName.Name() != e.Name() {
			t.Errorf("ByName(%q) = %v, %v", e.Name(), byName, err)
		}
	}
	if _, err := ByName("uperf"); err == nil {
		t.Error("ByName(uperf): want an error")
	}
}

func TestCheckTarget(t *testing.T) {
	sp, cb, ip := sockperf{}, cnibench{}, iperf3{}
	for _, target := range []string{"10.244.1.5", "127.0.0.1"} {
		for _, e := range []Engine{sp, cb, ip} {
			if err := CheckTarget(e, target); err != nil {
				t.Errorf("CheckTarget(%s, %q): %v", e.Name(), target, err)
			}
		}
	}
	for _, target := range []string{"fd00::5", "::ffff:10.0.0.1", "iperf.default.svc.cluster.local"} {
		if err := CheckTarget(sp, target); err == nil || !strings.Contains(err.Error(), "expects an IPv4 address") {
			t.Errorf("CheckTarget(sockperf, %q) = %v, want an IPv4 error", target, err)
		}
		if err := CheckTarget(cb, target); err != nil {
			t.Errorf("CheckTarget(cnibench, %q): %v", target, err)
		}
		if err := CheckTarget(ip, target); err != nil {
			t.Errorf("CheckTarget(iperf3, %q): %v", target, err)
		}
	}
	if err := CheckTarget(ip, ""); err == nil {
		t.Error("CheckTarget(empty): want an error")
	}
}

func TestMetricsFor(t *testing.T) {
	want := map[string]string{
		TCPStream: "throughput_gbps retransmits sender_cpu_pct receiver_cpu_pct",
		UDPStream: "throughput_gbps packets_per_s loss_pct jitter_ms sender_cpu_pct receiver_cpu_pct",
		TCPRR:     "transactions_per_s latency_mean_us latency_p50_us latency_p90_us latency_p99_us",
		TCPCRR:    "connections_per_s latency_mean_us latency_p50_us latency_p90_us latency_p99_us",
	}
	for kind, names := range want {
		if got := strings.Join(MetricsFor(kind), " "); got != names {
			t.Errorf("MetricsFor(%s) = %q, want %q", kind, got, names)
		}
	}
	if MetricsFor("bogus") != nil {
		t.Error("MetricsFor(bogus) != nil")
	}
}

func TestToolError(t *testing.T) {
	busy := error(&ToolError{Engine: NameIPerf3, Message: "the server is busy running a test. try again later"})
	if !IsServerBusy(busy) {
		t.Error("IsServerBusy(busy) = false")
	}
	wrapped := errors.Join(errors.New("sample 3"), busy)
	if !IsServerBusy(wrapped) {
		t.Error("IsServerBusy(wrapped busy) = false")
	}
	if IsServerBusy(&ToolError{Engine: NameIPerf3, Message: "unable to connect to server: Connection refused"}) {
		t.Error("IsServerBusy(refused) = true")
	}
	if got := busy.Error(); got != "iperf3 reported an error: the server is busy running a test. try again later" {
		t.Errorf("Error() = %q", got)
	}
}
