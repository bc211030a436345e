package agent

import (
	"context"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"
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

	for addr, want := range map[string]string{open.Addr().String(): ProbeOpen, closedAddr: ProbeRefused, full: ProbeTimeout} {
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
