package agent

import (
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/agentcmd"
)

func TestProbeOutcomes(t *testing.T) {
	ctx := context.Background()
	open, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()
	full := fullListener(t)

	for addr, want := range map[string]string{open.Addr().String(): agentcmd.ProbeOpen, closedAddr: agentcmd.ProbeRefused, full: agentcmd.ProbeTimeout} {
		got, err := Probe(ctx, addr, 300*time.Millisecond)
		if err != nil {
			t.Errorf("probe %s: %v", addr, err)
			continue
		}
		if got.Outcome != want {
			t.Errorf("probe %s: %s, want %s", addr, got.Outcome, want)
		}
	}
}

// fullListener returns the address of a loopback listener whose accept queue is full, so the
// kernel drops further SYNs: a silent drop, as a policy does, without leaving loopback.
func fullListener(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
	// A backlog of 0 admits one connection that is never accepted; fill it, and the queue.
	for i := 0; i < 4; i++ {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			break
		}
		t.Cleanup(func() { c.Close() })
	}
	return addr
}

func TestProbeUntilOpenReportsWhenTheServerAppeared(t *testing.T) {
	// A port that is closed now and listens after a while.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	opened := make(chan time.Time, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		l2, err := net.Listen("tcp", addr)
		opened <- time.Now()
		if err != nil {
			t.Error(err)
			return
		}
		t.Cleanup(func() { l2.Close() })
		for {
			c, err := l2.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	res, err := ProbeUntil(context.Background(), WatchOptions{Address: addr, Until: agentcmd.ProbeOpen, Interval: 10 * time.Millisecond,
		Timeout: 100 * time.Millisecond, MaxWait: 5 * time.Second, Confirm: 2})
	if err != nil {
		t.Fatal(err)
	}
	first := time.Unix(0, res.FirstNS)
	// The first open attempt started after the listener came up, within one interval (and
	// some scheduling slack).
	if d := first.Sub(<-opened); d < -time.Millisecond || d > 250*time.Millisecond {
		t.Errorf("first open attempt %s after the listener opened, want within [0, 250ms]: one 10 ms interval and a loaded machine's scheduling", d)
	}
	if res.Attempts < 20 {
		t.Errorf("%d attempts in 300 ms at 10 ms", res.Attempts)
	}
}

func TestProbeUntilGivesUp(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = ProbeUntil(context.Background(), WatchOptions{Address: ln.Addr().String(), Until: agentcmd.ProbeTimeout, Interval: 10 * time.Millisecond,
		Timeout: 50 * time.Millisecond, MaxWait: 200 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "no timeout within") {
		t.Errorf("err = %v", err)
	}
	if _, err := ProbeUntil(context.Background(), WatchOptions{Address: "x:1", Until: "closed", Interval: 1, Timeout: 1, MaxWait: 1}); err == nil {
		t.Error("bad --until accepted")
	}
}

// A ClusterIP that Cilium's socket load balancer cannot serve yet answers "no route to host",
// and Calico eBPF's "operation not permitted": outcomes of the path (not yet), not failures of
// the probe, so the Service readiness watch goes on until the endpoint answers.
func TestProbeOutcomeOfUnreachable(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.EHOSTUNREACH)}, agentcmd.ProbeUnreachable},
		{&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ENETUNREACH)}, agentcmd.ProbeUnreachable},
		{&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, agentcmd.ProbeRefused},
		// Calico eBPF's connect-time load balancer refuses a ClusterIP without endpoints.
		{&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.EPERM)}, agentcmd.ProbeRejected},
	} {
		if got, ok := probeOutcome(c.err); !ok || got != c.want {
			t.Errorf("%v: outcome %q (%v), want %q", c.err, got, ok, c.want)
		}
	}
	if _, ok := probeOutcome(errors.New("permission denied")); ok {
		t.Error("an error that says nothing of the path was taken for an outcome")
	}
}
