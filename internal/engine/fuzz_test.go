package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/testsupport/fuzzcheck"
)

// addTestdata seeds f with the recorded outputs in testdata whose names start with prefix.
func addTestdata(f *testing.F, prefix string) {
	f.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", prefix+"*"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no testdata %s*: %v", prefix, err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// fuzzParse checks one engine's Parse on stdout: it returns in bounded time, an error is the
// tool's own (a *ToolError) or names the part of the output it refused (one of names, or the
// byte offset or field of a JSON error), and the figures of an accepted output are finite.
func fuzzParse(t *testing.T, e Engine, w Workload, stdout []byte, names ...string) {
	var m Metrics
	var err error
	fuzzcheck.Within(t, e.Name()+" Parse", func() { m, err = e.Parse(w, stdout) })
	if err != nil {
		var te *ToolError
		if errors.As(err, &te) {
			if te.Engine != e.Name() {
				t.Fatalf("%s Parse: a ToolError of engine %q", e.Name(), te.Engine)
			}
			return
		}
		fuzzcheck.Names(t, err, names...)
		fuzzcheck.NamesJSONPlace(t, err)
		return
	}
	fuzzcheck.Finite(t, e.Name()+" Parse", m)
}

// FuzzIPerf3Parse feeds iperf3's -J output, TCP and UDP, to its parser.
func FuzzIPerf3Parse(f *testing.F) {
	addTestdata(f, "iperf3_")
	f.Add([]byte(`{"start":{"test_start":{"protocol":"UDP"}},"end":{"sum":{"seconds":1e-320,"bits_per_second":1,"packets":1,"lost_packets":0,"lost_percent":0,"jitter_ms":0}}}`))
	f.Fuzz(func(t *testing.T, stdout []byte) {
		for _, w := range []Workload{{Kind: TCPStream, Streams: 1}, {Kind: UDPStream, Rate: "1G"}} {
			fuzzParse(t, iperf3{}, w, stdout, "iperf3 output: ")
		}
	})
}

// FuzzSockperfParse feeds sockperf's ping-pong report (ANSI escapes and all) to its parser.
func FuzzSockperfParse(f *testing.F) {
	addTestdata(f, "sockperf_")
	f.Fuzz(func(t *testing.T, stdout []byte) {
		fuzzParse(t, sockperf{}, Workload{Kind: TCPRR, MessageSize: 64, Tool: NameSockperf}, stdout, "sockperf output: ")
	})
}

// FuzzCnibenchParse feeds the agent's rr and crr client reports to Parse and Histogram.
func FuzzCnibenchParse(f *testing.F) {
	addTestdata(f, "cnibench_")
	f.Add([]byte(`{"mode":"rr","transactions":1,"duration_s":1,"rate_per_s":1,"histogram":{"buckets":[[1,2]]}}`))
	f.Fuzz(func(t *testing.T, stdout []byte) {
		for _, kind := range []string{TCPRR, TCPCRR} {
			fuzzParse(t, cnibench{}, Workload{Kind: kind, MessageSize: 1, Tool: NameCnibench}, stdout, "cnibench agent output: ")
		}
		var err error
		fuzzcheck.Within(t, "cnibench Histogram", func() { _, err = cnibench{}.Histogram(stdout) })
		if err != nil {
			fuzzcheck.Names(t, err, "cnibench agent output: ")
			fuzzcheck.NamesJSONPlace(t, err)
		}
	})
}

// FuzzK6Parse feeds the split summary `cnibench agent split` prints after k6 to its parser.
func FuzzK6Parse(f *testing.F) {
	f.Add([]byte(`{"first":"cnibench-backend-a-0","weight_pct":40,"requests":1000,"errors":10,"requests_per_s":200,
	"latency":{"n":990,"mean_ms":1.5,"p50_ms":1.2,"p90_ms":2,"p99_ms":4,"max_ms":9},"share":0.41,
	"accuracy":{"n":2,"mean":0.01,"ci95_low":null,"ci95_high":null,"mean_abs":0.02},"windows":[],"backends":{}}`))
	f.Add([]byte(`{"requests":0}`))
	f.Add([]byte(`{"requests":1,"latency":{"p99_ms":1e307}}`))
	f.Fuzz(func(t *testing.T, stdout []byte) {
		fuzzParse(t, k6{}, Workload{Kind: GatewaySplit, Weight: 40, VUs: 10}, stdout, "split summary")
	})
}

// FuzzStreamParse feeds STREAM's report lines to its parser.
func FuzzStreamParse(f *testing.F) {
	addTestdata(f, "stream-")
	f.Fuzz(func(t *testing.T, stdout []byte) {
		fuzzParse(t, stream{}, Workload{Kind: Stream, Duration: time.Second}, stdout, "STREAM rate")
	})
}

// FuzzStressNGParse feeds stress-ng's metrics to its parser.
func FuzzStressNGParse(f *testing.F) {
	addTestdata(f, "stressng-")
	f.Fuzz(func(t *testing.T, stdout []byte) {
		fuzzParse(t, stressNG{}, Workload{Kind: CPU, Duration: time.Second}, stdout, "stress-ng cpu rate")
	})
}

// FuzzSysbenchParse feeds sysbench memory's two passes to its parser.
func FuzzSysbenchParse(f *testing.F) {
	addTestdata(f, "sysbench-")
	f.Fuzz(func(t *testing.T, stdout []byte) {
		fuzzParse(t, sysbench{}, Workload{Kind: Memory, Duration: time.Second}, stdout, "sysbench rate")
	})
}

// FuzzParseID reads workload IDs as stored runs, reference figures and the external agent's
// requests carry them: an ID that parses names a workload that validates (given a duration)
// and gives back the same ID.
func FuzzParseID(f *testing.F) {
	for _, id := range []string{"tcp-stream/1", "tcp-stream/4x64K", "udp-stream/100M/1300B", "udp-stream/search<=0.1%@1G/1300B",
		"tcp-rr/1B", "tcp-crr/64B", "tcp-rr/64B/sockperf", "cpu/2", "memory", "stream/1", "gateway-split/40%x100vu"} {
		f.Add(id)
	}
	f.Fuzz(func(t *testing.T, id string) {
		var w Workload
		var err error
		fuzzcheck.Within(t, "ParseID", func() { w, err = ParseID(id) })
		if err != nil {
			if !strings.Contains(err.Error(), "workload") && !strings.Contains(err.Error(), id) {
				t.Fatalf("ParseID(%q): error %q names neither the workload nor the ID", id, err)
			}
			return
		}
		w.Duration = time.Second
		if err := w.Validate(); err != nil {
			t.Fatalf("ParseID(%q) = %+v, which does not validate: %v", id, w, err)
		}
		if back := w.ID(); back != id {
			if again, err := ParseID(back); err != nil || again.ID() != back {
				t.Fatalf("ParseID(%q).ID() = %q, which does not read back: %v", id, back, err)
			}
		}
	})
}

// FuzzNetperfParse feeds netperf's -k KEY=VALUE output, and its error texts, to its parser
// for each workload it measures.
func FuzzNetperfParse(f *testing.F) {
	addTestdata(f, "netperf_")
	f.Add([]byte("THROUGHPUT=Inf\nTHROUGHPUT_UNITS=10^9bits/s\nPROTOCOL=TCP\n"))
	f.Add([]byte("TRANSACTION_RATE=NaN\nMEAN_LATENCY=1\nP50_LATENCY=1\nP90_LATENCY=1\nP99_LATENCY=1\nPROTOCOL=TCP\n"))
	f.Fuzz(func(t *testing.T, stdout []byte) {
		for _, w := range []Workload{{Kind: TCPStream, Streams: 1}, {Kind: TCPRR, MessageSize: 64}, {Kind: TCPCRR, MessageSize: 64}} {
			w.Tool = NameNetperf
			fuzzParse(t, netperf{}, w, stdout, "netperf output")
		}
	})
}
