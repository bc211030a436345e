package engine

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The live tests run the installed tools with the engines' own argv on loopback, to prove
// that argv and parsers match the real tools. Servers get one extra option binding them
// to 127.0.0.1 (in pods they listen on all addresses); clients only ever target 127.0.0.1.

// loopbackBind is the option appended to each engine's server argv in these tests.
func loopbackBind(engine string) []string {
	switch engine {
	case NameIPerf3:
		return []string{"-B", "127.0.0.1"}
	case NameSockperf:
		return []string{"-i", "127.0.0.1"}
	case NameNetperf:
		return []string{"-L", "127.0.0.1"}
	}
	return nil
}

// needTool skips the test when the tool is not installed or in -short mode.
func needTool(t *testing.T, tool string) {
	t.Helper()
	if testing.Short() {
		t.Skip("live tool test skipped in -short mode")
	}
	if _, err := exec.LookPath(tool); err != nil {
		t.Skipf("%s not installed: %v", tool, err)
	}
}

// freePort returns a loopback TCP port nothing listens on (also free for UDP, checked).
func freePort(t *testing.T) int {
	t.Helper()
	for range 20 {
		l, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("finding a free port: %v", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		u, err := net.ListenPacket("udp4", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		_ = u.Close()
		return port
	}
	t.Fatal("finding a free port: no TCP+UDP free port in 20 tries")
	return 0
}

// isListening reports whether /proc/net/tcp shows a socket listening on 127.0.0.1:port
// or 0.0.0.0:port. Reading /proc avoids connecting, which iperf3 would count as a test.
func isListening(port int) bool {
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return false
	}
	defer f.Close()
	suffix := fmt.Sprintf(":%04X", port)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 3 && fields[3] == "0A" && strings.HasSuffix(fields[1], suffix) &&
			(strings.HasPrefix(fields[1], "0100007F:") || strings.HasPrefix(fields[1], "00000000:")) {
			return true
		}
	}
	return false
}

// startServer runs e's server argv (bound to loopback) until the test ends.
func startServer(t *testing.T, e Engine, w Workload, port int) {
	t.Helper()
	argv := append(e.ServerArgv(w, port), loopbackBind(e.Name())...)
	cmd := exec.Command(argv[0], argv[1:]...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %q: %v", argv, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("server %q output:\n%s", argv, out.String())
		}
	})
	deadline := time.Now().Add(5 * time.Second)
	for !isListening(port) {
		if time.Now().After(deadline) {
			t.Fatalf("server %q not listening on 127.0.0.1:%d after 5s", argv, port)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runClient runs e's client argv against 127.0.0.1 and parses its stdout.
func runClient(t *testing.T, e Engine, w Workload, port int) (Metrics, error) {
	t.Helper()
	argv := e.ClientArgv(w, "127.0.0.1", port)
	ctx, cancel := context.WithTimeout(context.Background(), w.Duration+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	m, err := e.Parse(w, stdout.Bytes())
	if err != nil || runErr != nil {
		t.Logf("client %q: exit %v\nstdout:\n%s\nstderr:\n%s", argv, runErr, stdout.String(), stderr.String())
	}
	return m, err
}

// checkMetrics asserts that m has every metric of w's kind, within [lo, hi] when given.
func checkMetrics(t *testing.T, w Workload, m Metrics, bounds map[string][2]float64) {
	t.Helper()
	for _, name := range MetricsFor(w.Kind) {
		v, ok := m[name]
		if !ok {
			t.Errorf("%s: metric %s missing from %v", w.ID(), name, m)
			continue
		}
		if b, ok := bounds[name]; ok && (v < b[0] || v > b[1]) {
			t.Errorf("%s: %s = %v, want within [%v, %v]", w.ID(), name, v, b[0], b[1])
		}
	}
}

func TestLiveIPerf3(t *testing.T) {
	needTool(t, "iperf3")
	e := iperf3{}
	cases := []struct {
		w      Workload
		bounds map[string][2]float64
	}{
		{Workload{Kind: TCPStream, Streams: 1, Duration: time.Second},
			map[string][2]float64{MetricThroughput: {0.1, 1000}, MetricRetransmits: {0, 1e9}}},
		{Workload{Kind: TCPStream, Streams: 2, MessageSize: 64 << 10, Duration: time.Second},
			map[string][2]float64{MetricThroughput: {0.1, 1000}}},
		// 100 Mbit/s of 1300-byte datagrams: about 9600 datagrams/s if little is lost.
		{Workload{Kind: UDPStream, MessageSize: 1300, Rate: "100M", Duration: time.Second},
			map[string][2]float64{MetricThroughput: {0.05, 0.11}, MetricPacketRate: {4800, 10500},
				MetricLoss: {0, 50}, MetricJitter: {0, 100}}},
	}
	port := freePort(t)
	startServer(t, e, cases[0].w, port)
	for _, c := range cases {
		if err := c.w.Validate(); err != nil {
			t.Fatal(err)
		}
		m, err := runClient(t, e, c.w, port)
		for try := 0; IsServerBusy(err) && try < 10; try++ { // the previous test may still wind down
			time.Sleep(200 * time.Millisecond)
			m, err = runClient(t, e, c.w, port)
		}
		if err != nil {
			t.Errorf("%s: %v", c.w.ID(), err)
			continue
		}
		t.Logf("%s: %v", c.w.ID(), m)
		checkMetrics(t, c.w, m, c.bounds)
	}
}

func TestLiveSockperf(t *testing.T) {
	needTool(t, "sockperf")
	e := sockperf{}
	w := Workload{Kind: TCPRR, MessageSize: SockperfMinSize, Duration: time.Second}
	if err := w.Validate(); err != nil || !e.Supports(w) {
		t.Fatalf("workload %s: %v, supported %v", w.ID(), err, e.Supports(w))
	}
	port := freePort(t)
	startServer(t, e, w, port)
	m, err := runClient(t, e, w, port)
	if err != nil {
		t.Fatalf("%s: %v", w.ID(), err)
	}
	t.Logf("%s: %v", w.ID(), m)
	checkMetrics(t, w, m, map[string][2]float64{MetricTransactionRate: {100, 1e7}, MetricLatencyMean: {0.1, 1e6}})
	if !(m[MetricLatencyP50] <= m[MetricLatencyP90] && m[MetricLatencyP90] <= m[MetricLatencyP99]) {
		t.Errorf("percentiles not ordered: %v", m)
	}
}

// TestLiveRefused proves failures are detected from the output alone: both tools exit 0
// when nothing listens on the port.
func TestLiveRefused(t *testing.T) {
	for _, c := range []struct {
		e Engine
		w Workload
	}{
		{iperf3{}, Workload{Kind: TCPStream, Streams: 1, Duration: time.Second}},
		{sockperf{}, Workload{Kind: TCPRR, MessageSize: 64, Duration: time.Second}},
	} {
		t.Run(c.e.Name(), func(t *testing.T) {
			needTool(t, c.e.Name())
			_, err := runClient(t, c.e, c.w, freePort(t))
			var te *ToolError
			if !errors.As(err, &te) || !strings.Contains(te.Message, "refused") {
				t.Errorf("error %v, want a ToolError about the refused connection", err)
			}
		})
	}
}
