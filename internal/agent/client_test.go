package agent

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/agentcmd"
)

// checkResult checks what any successful run must satisfy.
func checkResult(t *testing.T, r agentcmd.Result, mode string, size int, d time.Duration) {
	t.Helper()
	t.Logf("%s: %d transactions in %.3f s (%.0f/s), errors %d, latency us: min %.1f p50 %.1f p90 %.1f p99 %.1f max %.1f mean %.1f",
		mode, r.Transactions, r.DurationSec, r.RatePerSec, r.Errors, r.LatencyUsec.Min, r.LatencyUsec.P50,
		r.LatencyUsec.P90, r.LatencyUsec.P99, r.LatencyUsec.Max, r.LatencyUsec.Mean)
	if r.Tool != "cnibench" || r.Mode != mode || r.MessageSize != size {
		t.Errorf("tool, mode, size = %q, %q, %d; want cnibench, %s, %d", r.Tool, r.Mode, r.MessageSize, mode, size)
	}
	if r.Transactions <= 0 {
		t.Errorf("transactions = %d, want > 0", r.Transactions)
	}
	if r.Errors != 0 || r.ErrorKinds != nil || r.LastError != "" {
		t.Errorf("errors = %d %v %q, want none", r.Errors, r.ErrorKinds, r.LastError)
	}
	// The loop stops starting transactions at d; the last one ends a round trip later.
	if r.DurationSec < d.Seconds() || r.DurationSec > d.Seconds()+0.5 {
		t.Errorf("duration = %.3f s, want %.3f s plus at most one transaction", r.DurationSec, d.Seconds())
	}
	if want := float64(r.Transactions) / r.DurationSec; math.Abs(r.RatePerSec-want) > 1e-9*want {
		t.Errorf("rate = %f, want transactions/duration = %f", r.RatePerSec, want)
	}
	l := r.LatencyUsec
	if !(0 < l.Min && l.Min <= l.P50 && l.P50 <= l.P90 && l.P90 <= l.P99 && l.P99 <= l.Max) {
		t.Errorf("latencies not ordered min <= p50 <= p90 <= p99 <= max: %+v", l)
	}
	if l.Mean < l.Min || l.Mean > l.Max {
		t.Errorf("mean %f outside [min, max] = [%f, %f]", l.Mean, l.Min, l.Max)
	}
	// Transactions run back to back, so their latencies cannot add up to more than the run.
	if sum := l.Mean * float64(r.Transactions) / 1e6; sum > r.DurationSec*1.001 {
		t.Errorf("mean latency x transactions = %.3f s exceeds the run's %.3f s", sum, r.DurationSec)
	}
}

func TestRRAndCRROnLoopback(t *testing.T) {
	const size = 100
	port := startEcho(t, size)
	o := ClientOptions{Target: loopback, Port: port, Duration: time.Second, Size: size}
	for _, c := range []struct {
		mode string
		run  func(context.Context, ClientOptions) (agentcmd.Result, error)
	}{{"rr", RR}, {"crr", CRR}} {
		t.Run(c.mode, func(t *testing.T) {
			r, err := c.run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			checkResult(t, r, c.mode, size, o.Duration)
			if r.Address != "127.0.0.1:"+strconv.Itoa(port) || r.Target != loopback {
				t.Errorf("target, address = %q, %q", r.Target, r.Address)
			}
		})
	}
}

func TestClientOptionErrorsNameTheSetting(t *testing.T) {
	good := ClientOptions{Target: loopback, Port: 1, Duration: time.Second, Size: 1}
	for flag, mutate := range map[string]func(*ClientOptions){
		"target: ":               func(o *ClientOptions) { o.Target = "" },
		"port: 0":                func(o *ClientOptions) { o.Port = 0 },
		"duration: 0s":           func(o *ClientOptions) { o.Duration = 0 },
		"size: 0":                func(o *ClientOptions) { o.Size = 0 },
		"timeout: -1s":           func(o *ClientOptions) { o.Timeout = -time.Second },
		"maxConsecutiveErrors: ": func(o *ClientOptions) { o.MaxConsecutiveErrors = -1 },
	} {
		o := good
		mutate(&o)
		for name, run := range map[string]func(context.Context, ClientOptions) (agentcmd.Result, error){"rr": RR, "crr": CRR} {
			if _, err := run(context.Background(), o); err == nil || !strings.Contains(err.Error(), flag) {
				t.Errorf("%s with a bad %s: error %v, want one naming %s", name, flag, err, flag)
			}
		}
	}
}

// closedPort returns a loopback port nothing listens on: connects to it are refused.
func closedPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(loopback, "0"))
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	return port
}

func TestRRNoServer(t *testing.T) {
	_, err := RR(context.Background(), ClientOptions{Target: loopback, Port: closedPort(t), Duration: time.Second, Size: 1})
	if err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("rr without a server: %v, want connection refused", err)
	}
}

func TestCRRStopsAfterConsecutiveErrors(t *testing.T) {
	start := time.Now()
	_, err := CRR(context.Background(), ClientOptions{
		Target: loopback, Port: closedPort(t), Duration: time.Minute, Size: 1, MaxConsecutiveErrors: 50,
	})
	if err == nil || !strings.Contains(err.Error(), "50 consecutive errors") || !strings.Contains(err.Error(), "dial_refused") {
		t.Fatalf("crr without a server: %v, want a stop after 50 consecutive dial_refused errors", err)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("took %s to give up", el)
	}
}

// TestTimeoutIsAnError runs clients whose messages are smaller than the server's, so that the
// server never answers: each transaction times out, and a run with none completed fails.
func TestTimeoutIsAnError(t *testing.T) {
	port := startEcho(t, 100)
	o := ClientOptions{Target: loopback, Port: port, Duration: 300 * time.Millisecond, Size: 10, Timeout: 100 * time.Millisecond}
	for name, run := range map[string]func(context.Context, ClientOptions) (agentcmd.Result, error){"rr": RR, "crr": CRR} {
		_, err := run(context.Background(), o)
		if err == nil || !strings.Contains(err.Error(), "no transaction completed") || !strings.Contains(err.Error(), "i/o timeout") {
			t.Errorf("%s against a server that never answers: %v, want no transaction completed, i/o timeout", name, err)
		}
	}
}

// TestCancelInterruptsABlockedRead cancels clients stuck waiting for an answer that never
// comes, with a timeout far beyond the test: only the context can free them.
func TestCancelInterruptsABlockedRead(t *testing.T) {
	port := startEcho(t, 100)
	o := ClientOptions{Target: loopback, Port: port, Duration: time.Minute, Size: 10, Timeout: time.Minute}
	for name, run := range map[string]func(context.Context, ClientOptions) (agentcmd.Result, error){"rr": RR, "crr": CRR} {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		start := time.Now()
		_, err := run(ctx, o)
		cancel()
		if err == nil || !strings.Contains(err.Error(), "deadline exceeded") {
			t.Errorf("%s: %v, want the context's error", name, err)
		}
		if el := time.Since(start); el > 5*time.Second {
			t.Errorf("%s: returned %s after the context ended", name, el)
		}
	}
}

func TestResolve(t *testing.T) {
	ctx := context.Background()
	for target, want := range map[string]string{"127.0.0.1": "127.0.0.1:80", "::1": "[::1]:80", "fe80::1%eth0": "[fe80::1%eth0]:80"} {
		got, err := resolve(ctx, target, 80, time.Second)
		if err != nil || got.String() != want {
			t.Errorf("resolve(%q) = %v, %v; want %s", target, got, err, want)
		}
	}
	// A name is looked up once; localhost comes from /etc/hosts, no network involved.
	got, err := resolve(ctx, "localhost", 80, time.Second)
	if err != nil || !got.Addr().IsLoopback() {
		t.Errorf("resolve(localhost) = %v, %v; want a loopback address", got, err)
	}
}

func TestReason(t *testing.T) {
	for want, err := range map[string]error{
		"eaddrnotavail": &net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.EADDRNOTAVAIL)},
		"refused":       &net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)},
		"reset":         &net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)},
		"timeout":       &net.OpError{Op: "read", Err: os.ErrDeadlineExceeded},
		"eof":           fmt.Errorf("read: %w", io.ErrUnexpectedEOF),
		"other":         os.ErrPermission,
	} {
		if got := reason(err); got != want {
			t.Errorf("reason(%v) = %s, want %s", err, got, want)
		}
	}
}

func TestPortExhaustionWarning(t *testing.T) {
	proc := t.TempDir()
	dir := filepath.Join(proc, "sys/net/ipv4")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]string{"ip_local_port_range": "32768\t60999\n", "tcp_tw_reuse": "2\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w := portExhaustionWarning(7, "10.0.0.5:5000", proc)
	for _, want := range []string{"7 connects to 10.0.0.5:5000 failed with EADDRNOTAVAIL", "32768-60999", "tcp_tw_reuse 2", "about 471 new connections/s"} {
		if !strings.Contains(w, want) {
			t.Errorf("warning lacks %q:\n%s", want, w)
		}
	}
	// Without the files the warning still explains the failure.
	if w := portExhaustionWarning(1, "x", t.TempDir()); !strings.Contains(w, "EADDRNOTAVAIL") || !strings.Contains(w, "unknown") {
		t.Errorf("warning without sysctls: %s", w)
	}
}

func TestRunReportsPortExhaustion(t *testing.T) {
	var log bytes.Buffer
	r, err := newRun(context.Background(), "crr", ClientOptions{Target: loopback, Port: 1, Duration: time.Second, Size: 1, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	r.ok(time.Millisecond)
	for range 3 {
		if err := r.fail("dial", &net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.EADDRNOTAVAIL)}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := r.finish(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors != 3 || res.ErrorKinds[kindPortExhaustion] != 3 || len(res.Warnings) != 1 {
		t.Errorf("errors %d, kinds %v, warnings %q; want 3 dial_eaddrnotavail and a warning", res.Errors, res.ErrorKinds, res.Warnings)
	}
	// One line when it first happens, the explanation at the end.
	if n := strings.Count(log.String(), "warning:"); n != 2 {
		t.Errorf("log has %d warnings, want 2:\n%s", n, log.String())
	}
}
