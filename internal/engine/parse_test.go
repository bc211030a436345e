package engine

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// Expected values below were read by eye from the files in testdata (see its README),
// not computed by the parsers.

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("reading testdata: %v", err)
	}
	return b
}

// assertMetrics checks that got has exactly the keys of want, each within a relative
// 1e-9 of the expected value.
func assertMetrics(t *testing.T, got, want Metrics) {
	t.Helper()
	var gotKeys, wantKeys []string
	for k := range got {
		gotKeys = append(gotKeys, k)
	}
	for k := range want {
		wantKeys = append(wantKeys, k)
	}
	sort.Strings(gotKeys)
	sort.Strings(wantKeys)
	if strings.Join(gotKeys, ",") != strings.Join(wantKeys, ",") {
		t.Errorf("metric names %v, want %v", gotKeys, wantKeys)
	}
	for k, w := range want {
		g, ok := got[k]
		if ok && math.Abs(g-w) > 1e-9*math.Max(1, math.Abs(w)) {
			t.Errorf("%s = %v, want %v", k, g, w)
		}
	}
}

func TestIPerf3ParseRecorded(t *testing.T) {
	d := 2 * time.Second
	cases := []struct {
		file string
		w    Workload
		want Metrics
	}{
		{"iperf3_tcp_1stream.json", Workload{Kind: TCPStream, Streams: 1, Duration: d}, Metrics{
			"throughput_gbps":  14.140492466986109, // end.sum_received.bits_per_second / 1e9
			"retransmits":      12,                 // end.sum_sent.retransmits
			"sender_cpu_pct":   35.31335449249233,  // host_total
			"receiver_cpu_pct": 32.8982456559705,   // remote_total
		}},
		{"iperf3_tcp_4streams.json", Workload{Kind: TCPStream, Streams: 4, Duration: d}, Metrics{
			"throughput_gbps":  11.543564577985989,
			"retransmits":      1,
			"sender_cpu_pct":   29.25942364454564,
			"receiver_cpu_pct": 27.10205725944045,
		}},
		{"iperf3_udp_100M_1300B.json", Workload{Kind: UDPStream, MessageSize: 1300, Rate: "100M", Duration: d}, Metrics{
			"throughput_gbps":  0.09956474396085997,   // end.sum_received.bits_per_second (end.sum says 99955651, the sender's)
			"packets_per_s":    9573.533073159611,     // (19223 - 74) / 2.000202
			"loss_pct":         0.3849555220309005,    // lost_percent
			"jitter_ms":        0.0053815434175026149, // jitter_ms
			"sender_cpu_pct":   7.0383659124010016,
			"receiver_cpu_pct": 4.2865913347271842,
		}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			got, err := iperf3{}.Parse(c.w, readTestdata(t, c.file))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			assertMetrics(t, got, c.want)
		})
	}
}

func TestIPerf3ParseErrors(t *testing.T) {
	tcp := Workload{Kind: TCPStream, Streams: 1, Duration: time.Second}
	udp := Workload{Kind: UDPStream, MessageSize: 1300, Rate: "100M", Duration: time.Second}
	for _, c := range []struct {
		file string
		want string
		busy bool
	}{
		{"iperf3_error_refused.json", "iperf3 reported an error: unable to connect to server: Connection refused", false},
		{"iperf3_error_busy.json", "iperf3 reported an error: the server is busy running a test. try again later", true},
	} {
		_, err := iperf3{}.Parse(tcp, readTestdata(t, c.file))
		var te *ToolError
		if !errors.As(err, &te) || err.Error() != c.want {
			t.Errorf("%s: error %v, want ToolError %q", c.file, err, c.want)
		}
		if IsServerBusy(err) != c.busy {
			t.Errorf("%s: IsServerBusy = %v", c.file, !c.busy)
		}
	}
	for _, c := range []struct {
		name   string
		w      Workload
		stdout string
		want   string
	}{
		{"usage text", tcp, string(readTestdata(t, "iperf3_param_error_stdout.txt")), "expected a JSON document (-J), got \"Usage: iperf3"},
		{"empty", tcp, " \n", "empty stdout"},
		{"truncated", tcp, `{"start": {`, "decoding JSON"},
		{"udp file for tcp", tcp, string(readTestdata(t, "iperf3_udp_100M_1300B.json")), "protocol: expected TCP for tcp-stream, got \"UDP\""},
		{"tcp file for udp", udp, string(readTestdata(t, "iperf3_tcp_1stream.json")), "protocol: expected UDP for udp-stream, got \"TCP\""},
		{"no end", tcp, `{"start":{"test_start":{"protocol":"TCP"}},"end":{}}`, "end.sum_received"},
		{"udp no packets", udp, `{"start":{"test_start":{"protocol":"UDP"}},"end":{"sum_received":{"seconds":1,"packets":0,"lost_packets":0,"lost_percent":0,"jitter_ms":0}}}`, "packets: expected datagrams sent > 0"},
		{"udp no loss fields", udp, `{"start":{"test_start":{"protocol":"UDP"}},"end":{"sum_received":{"seconds":1,"bits_per_second":5}}}`, "expected packets, lost_packets"},
	} {
		_, err := iperf3{}.Parse(c.w, []byte(c.stdout))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.name, err, c.want)
		}
	}
}

// TestIPerf3ParseFallbacks covers layouts other iperf3 versions produce: UDP without
// end.sum_received (goodput derived from end.sum and the loss), and -R (CPU swapped).
func TestIPerf3ParseFallbacks(t *testing.T) {
	udp := Workload{Kind: UDPStream, MessageSize: 1000, Rate: "8M", Duration: time.Second}
	got, err := iperf3{}.Parse(udp, []byte(`{"start":{"test_start":{"protocol":"UDP"}},"end":{
		"sum":{"seconds":2,"bits_per_second":8000000,"packets":2000,"lost_packets":500,"lost_percent":25,"jitter_ms":0.5}}}`))
	if err != nil {
		t.Fatal(err)
	}
	assertMetrics(t, got, Metrics{"throughput_gbps": 0.006, "packets_per_s": 750, "loss_pct": 25, "jitter_ms": 0.5})
	tcp := Workload{Kind: TCPStream, Streams: 1, Duration: time.Second}
	got, err = iperf3{}.Parse(tcp, []byte(`{"start":{"test_start":{"protocol":"TCP","reverse":1}},"end":{
		"sum_sent":{"seconds":1,"bits_per_second":1e9,"retransmits":3},
		"sum_received":{"seconds":1,"bits_per_second":2e9},
		"cpu_utilization_percent":{"host_total":10,"remote_total":20}}}`))
	if err != nil {
		t.Fatal(err)
	}
	assertMetrics(t, got, Metrics{"throughput_gbps": 2, "retransmits": 3, "sender_cpu_pct": 20, "receiver_cpu_pct": 10})
}

func TestSockperfParseRecorded(t *testing.T) {
	w := Workload{Kind: TCPRR, MessageSize: 64, Duration: 2 * time.Second}
	got, err := sockperf{}.Parse(w, readTestdata(t, "sockperf_pp_64B_fullrtt.txt"))
	if err != nil {
		t.Fatalf("full RTT: %v", err)
	}
	assertMetrics(t, got, Metrics{
		"transactions_per_s": 66937.62183235868, // 103017 observations / 1.539 s valid duration
		"latency_mean_us":    14.910,            // avg-rtt
		"latency_p50_us":     13.519,
		"latency_p90_us":     14.381,
		"latency_p99_us":     35.422,
	})
	// Without --full-rtt sockperf prints RTT/2; the parser doubles every latency.
	got, err = sockperf{}.Parse(w, readTestdata(t, "sockperf_pp_64B_halfrtt.txt"))
	if err != nil {
		t.Fatalf("half RTT: %v", err)
	}
	assertMetrics(t, got, Metrics{
		"transactions_per_s": 69501.29032258064, // 107727 / 1.550
		"latency_mean_us":    14.366,            // 2 * avg-latency 7.183
		"latency_p50_us":     13.580,            // 2 * 6.790
		"latency_p90_us":     14.400,            // 2 * 7.200
		"latency_p99_us":     18.426,            // 2 * 9.213
	})
}

func TestSockperfParseErrors(t *testing.T) {
	w := Workload{Kind: TCPRR, MessageSize: 64, Duration: 2 * time.Second}
	full := string(readTestdata(t, "sockperf_pp_64B_fullrtt.txt"))
	for _, c := range []struct {
		file string
		want string
	}{
		{"sockperf_error_refused.txt", "sockperf reported an error: ERROR: Can`t connect socket (errno=111 Connection refused)"},
		{"sockperf_error_msgsize.txt", "sockperf reported an error: '-m' Invalid message size: 13 (min: 14)"},
	} {
		_, err := sockperf{}.Parse(w, readTestdata(t, c.file))
		var te *ToolError
		if !errors.As(err, &te) || err.Error() != c.want {
			t.Errorf("%s: error %v, want ToolError %q", c.file, err, c.want)
		}
	}
	for _, c := range []struct {
		name, stdout, want string
	}{
		{"empty", "", "empty stdout"},
		{"peer closed", full[:400] + "IP = 127.0.0.1       PORT = 45301 # TCP sockperf: ERROR: A connection was forcibly closed by a peer (errno=0 Success)\n",
			"sockperf reported an error: ERROR: A connection was forcibly closed"},
		{"truncated", full[:strings.Index(full, "====>")], `expected "Total N observations", found none`},
		{"no mean", strings.Replace(full, "avg-rtt", "avg-what", 1), `expected "avg-rtt", found none`},
		{"no p99", strings.Replace(full, "percentile 99.000", "percentile 98.000", 1), `"---> percentile 99.000 = ...", found none`},
		{"two servers", full + "sockperf: ========= Printing statistics for Server No: 1\n", "expected statistics for exactly 1 server, got 2"},
		{"zero window", strings.Replace(full, "RunTime=1.539", "RunTime=0.000", 1), "expected > 0 s"},
	} {
		_, err := sockperf{}.Parse(w, []byte(c.stdout))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.name, err, c.want)
		}
	}
}

func TestCnibenchParseRecorded(t *testing.T) {
	crr := Workload{Kind: TCPCRR, MessageSize: 1, Duration: 5 * time.Second}
	got, err := cnibench{}.Parse(crr, readTestdata(t, "cnibench_crr_1B.json"))
	if err != nil {
		t.Fatal(err)
	}
	assertMetrics(t, got, Metrics{"connections_per_s": 12245.79, "latency_mean_us": 79.5,
		"latency_p50_us": 71.3, "latency_p90_us": 102.8, "latency_p99_us": 188.4, "errors": 3})
	rr := Workload{Kind: TCPRR, MessageSize: 1, Duration: 2 * time.Second}
	got, err = cnibench{}.Parse(rr, readTestdata(t, "cnibench_rr_1B.json"))
	if err != nil {
		t.Fatal(err)
	}
	assertMetrics(t, got, Metrics{"transactions_per_s": 70506.23, "latency_mean_us": 14.18,
		"latency_p50_us": 13.6, "latency_p90_us": 15.2, "latency_p99_us": 29.9, "errors": 0})

	_, err = cnibench{}.Parse(crr, readTestdata(t, "cnibench_crr_refused.json"))
	var te *ToolError
	if !errors.As(err, &te) || !strings.Contains(err.Error(), "all attempts failed (48211 errors, 0 transactions") {
		t.Errorf("refused: error %v, want a ToolError about 48211 errors", err)
	}
	for _, c := range []struct {
		name   string
		w      Workload
		stdout string
		want   string
	}{
		{"rr output for crr", crr, string(readTestdata(t, "cnibench_rr_1B.json")), `mode: expected "crr" for tcp-crr, got "rr"`},
		{"crr output for rr", rr, string(readTestdata(t, "cnibench_crr_1B.json")), `mode: expected "rr" for tcp-rr, got "crr"`},
		{"empty", crr, "\n", "empty stdout"},
		{"not json", crr, "Error: unknown flag: --size\n", "decoding JSON"},
		{"nothing done", crr, `{"mode":"crr","duration_s":5,"transactions":0,"errors":0}`, "transactions: expected > 0, got 0"},
		{"no duration", crr, `{"mode":"crr","transactions":5,"rate_per_s":1}`, "duration_s and rate_per_s: expected > 0"},
	} {
		_, err := cnibench{}.Parse(c.w, []byte(c.stdout))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.name, err, c.want)
		}
	}
}
