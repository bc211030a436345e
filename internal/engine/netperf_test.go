package engine

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestNetperfParseRecorded(t *testing.T) {
	d := 2 * time.Second
	for _, c := range []struct {
		file string
		w    Workload
		want Metrics
	}{
		{"netperf_tcp_stream_128K.txt", Workload{Kind: TCPStream, Streams: 1, MessageSize: 128 << 10, Duration: d}, Metrics{
			"throughput_gbps": 6.92294, // THROUGHPUT=6922.94 of 10^6bits/s
			"retransmits":     37,      // LOCAL_TRANSPORT_RETRANS
		}},
		{"netperf_tcp_rr_1B.txt", Workload{Kind: TCPRR, MessageSize: 1, Duration: d}, Metrics{
			"transactions_per_s": 65374.151, "latency_mean_us": 15.26,
			"latency_p50_us": 4, "latency_p90_us": 5, "latency_p99_us": 37,
		}},
		{"netperf_tcp_crr_1B.txt", Workload{Kind: TCPCRR, MessageSize: 1, Duration: d}, Metrics{
			"connections_per_s": 21048.520, "latency_mean_us": 47.46,
			"latency_p50_us": 19, "latency_p90_us": 25, "latency_p99_us": 288,
		}},
	} {
		t.Run(c.file, func(t *testing.T) {
			m, err := netperf{}.Parse(c.w, readTestdata(t, c.file))
			if err != nil {
				t.Fatal(err)
			}
			assertMetrics(t, m, c.want)
		})
	}
}

func TestNetperfParseErrors(t *testing.T) {
	w := Workload{Kind: TCPRR, MessageSize: 1, Duration: time.Second}
	_, err := netperf{}.Parse(w, readTestdata(t, "netperf_error_refused.txt"))
	var te *ToolError
	if !errors.As(err, &te) || te.Engine != NameNetperf || !strings.Contains(te.Message, "are you sure there is a netserver listening on 127.0.0.1 at port 25980?") {
		t.Errorf("refused: %v", err)
	}
	for _, c := range []struct{ name, out, want string }{
		{"empty", "", "empty stdout"},
		{"a selector missing", "TRANSACTION_RATE=10\nPROTOCOL=TCP\n", "expected MEAN_LATENCY=..., found none"},
		{"not a number", "TRANSACTION_RATE=fast\nPROTOCOL=TCP\n", "TRANSACTION_RATE: strconv.ParseFloat"},
		{"no transaction", "TRANSACTION_RATE=0\nMEAN_LATENCY=0\nP50_LATENCY=0\nP90_LATENCY=0\nP99_LATENCY=0\nPROTOCOL=TCP\n", "expected > 0"},
		{"another protocol", "TRANSACTION_RATE=10\nPROTOCOL=UDP\n", "PROTOCOL: expected TCP"},
	} {
		if _, err := (netperf{}).Parse(w, []byte(c.out)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	stream := Workload{Kind: TCPStream, Streams: 1, Duration: time.Second}
	if _, err := (netperf{}).Parse(stream, []byte("THROUGHPUT=5\nTHROUGHPUT_UNITS=Trans/s\nPROTOCOL=TCP\n")); err == nil || !strings.Contains(err.Error(), "THROUGHPUT_UNITS") {
		t.Errorf("unknown units: %v", err)
	}
	m, err := netperf{}.Parse(stream, []byte("THROUGHPUT=2.5\nTHROUGHPUT_UNITS=10^9bits/s\nPROTOCOL=TCP\nLOCAL_TRANSPORT_RETRANS=-1\n"))
	if err != nil {
		t.Fatal(err)
	}
	assertMetrics(t, m, Metrics{"throughput_gbps": 2.5}) // -1: no retransmit count
}

// netperf's argv: the data port beside the control port, one test per kind.
func TestNetperfArgv(t *testing.T) {
	d := 5 * time.Second
	e := netperf{}
	for _, c := range []struct {
		w    Workload
		want string
	}{
		{Workload{Kind: TCPStream, Streams: 1, Duration: d},
			"netperf -H 10.0.0.2 -p 25201 -t TCP_STREAM -l 5 -P0 -j -- -P ,25202 -k THROUGHPUT,THROUGHPUT_UNITS,ELAPSED_TIME,PROTOCOL,LOCAL_SEND_SIZE,LOCAL_TRANSPORT_RETRANS"},
		{Workload{Kind: TCPStream, Streams: 1, MessageSize: 8192, Duration: d},
			"netperf -H 10.0.0.2 -p 25201 -t TCP_STREAM -l 5 -P0 -j -- -P ,25202 -m 8192 -k THROUGHPUT,THROUGHPUT_UNITS,ELAPSED_TIME,PROTOCOL,LOCAL_SEND_SIZE,LOCAL_TRANSPORT_RETRANS"},
		{Workload{Kind: TCPRR, MessageSize: 1, Duration: d},
			"netperf -H 10.0.0.2 -p 25201 -t TCP_RR -l 5 -P0 -j -- -P ,25202 -r 1,1 -k TRANSACTION_RATE,MEAN_LATENCY,P50_LATENCY,P90_LATENCY,P99_LATENCY,ELAPSED_TIME,PROTOCOL,REQUEST_SIZE,RESPONSE_SIZE"},
		{Workload{Kind: TCPCRR, MessageSize: 64, Duration: d},
			"netperf -H 10.0.0.2 -p 25201 -t TCP_CRR -l 5 -P0 -j -- -P ,25202 -r 64,64 -k TRANSACTION_RATE,MEAN_LATENCY,P50_LATENCY,P90_LATENCY,P99_LATENCY,ELAPSED_TIME,PROTOCOL,REQUEST_SIZE,RESPONSE_SIZE"},
	} {
		if got := strings.Join(e.ClientArgv(c.w, "10.0.0.2", 25201), " "); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.w.ID(), got, c.want)
		}
	}
	if got := strings.Join(e.ServerArgv(Workload{}, 25201), " "); got != "netserver -D -p 25201" {
		t.Errorf("server %s", got)
	}
}

// TestLiveNetperf runs netserver and netperf with the engine's argv on loopback: every kind
// it measures, and the refusal of a port with no netserver.
func TestLiveNetperf(t *testing.T) {
	needTool(t, "netperf")
	needTool(t, "netserver")
	e := netperf{}
	port := freePort(t)
	startServer(t, e, Workload{}, port)
	for _, c := range []struct {
		w      Workload
		bounds map[string][2]float64
	}{
		{Workload{Kind: TCPStream, Streams: 1, MessageSize: 64 << 10, Duration: time.Second},
			map[string][2]float64{MetricThroughput: {0.1, 1000}, MetricRetransmits: {0, 1e9}}},
		{Workload{Kind: TCPRR, MessageSize: 1, Duration: time.Second},
			map[string][2]float64{MetricTransactionRate: {100, 1e7}, MetricLatencyMean: {0.1, 1e6}}},
	} {
		c.w.Tool = NameNetperf
		if err := c.w.Validate(); err != nil {
			t.Fatal(err)
		}
		m, err := runClient(t, e, c.w, port)
		if err != nil {
			t.Errorf("%s: %v", c.w.ID(), err)
			continue
		}
		t.Logf("%s: %v", c.w.ID(), m)
		for name, b := range c.bounds {
			if v, ok := m[name]; !ok || v < b[0] || v > b[1] {
				t.Errorf("%s: %s = %v (present %v), want within %v", c.w.ID(), name, v, ok, b)
			}
		}
		if c.w.Kind != TCPStream && !(m[MetricLatencyP50] <= m[MetricLatencyP90] && m[MetricLatencyP90] <= m[MetricLatencyP99]) {
			t.Errorf("%s: percentiles not ordered: %v", c.w.ID(), m)
		}
	}
	_, err := runClient(t, e, Workload{Kind: TCPRR, MessageSize: 1, Duration: time.Second}, freePort(t))
	var te *ToolError
	if !errors.As(err, &te) || !strings.Contains(te.Message, "netserver listening") {
		t.Errorf("no netserver: %v, want a ToolError asking for a netserver", err)
	}
}
