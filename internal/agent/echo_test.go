package agent

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/setting"
)

// Every network test here uses 127.0.0.1 only.
const loopback = "127.0.0.1"

// startEcho runs an in-process echo server on 127.0.0.1 and returns its port. Cleanup stops
// it and checks that Serve returned nil, promptly.
func startEcho(t *testing.T, size int) int {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := ListenEcho(ctx, EchoOptions{Address: loopback, Size: size})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("Serve did not return within 5 s of cancel")
		}
	})
	return s.Addr().(*net.TCPAddr).Port
}

func dialLoopback(t *testing.T, port int) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", net.JoinHostPort(loopback, strconv.Itoa(port)), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	return c
}

func TestEchoAnswersWholeMessages(t *testing.T) {
	port := startEcho(t, 4)
	c := dialLoopback(t, port)
	// A message split over two writes is answered once complete, and two messages in one
	// write are answered as two.
	for _, chunk := range []string{"ab", "cd", "efghijkl"} {
		if _, err := c.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	got := make([]byte, 12)
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if string(got) != "abcdefghijkl" {
		t.Fatalf("echo = %q, want %q", got, "abcdefghijkl")
	}
	// Half a message then EOF: the server closes without answering.
	if _, err := c.Write([]byte("xy")); err != nil {
		t.Fatal(err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(c)
	if err != nil || len(rest) != 0 {
		t.Fatalf("after a partial message and EOF: read %q, %v; want EOF and nothing", rest, err)
	}
}

func TestEchoServeStopsWithOpenConnections(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := ListenEcho(ctx, EchoOptions{Address: loopback, Size: 1})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	// An idle connection is parked in a read on the server: cancel must still end Serve.
	c := dialLoopback(t, s.Addr().(*net.TCPAddr).Port)
	if _, err := c.Write([]byte{1}); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve after cancel = %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return within 5 s of cancel")
	}
	// The server closed the connection rather than leaving it open.
	if n, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatalf("read %d bytes from a stopped server's connection", n)
	}
}

func TestEchoOptionErrorsNameTheSetting(t *testing.T) {
	for _, o := range []EchoOptions{{Port: -1, Size: 1}, {Port: 70000, Size: 1}, {Size: 0}, {Size: MaxSize + 1}} {
		_, err := ListenEcho(context.Background(), o)
		var se *setting.Error
		if !errors.As(err, &se) || (se.Name != "port" && se.Name != "size") {
			t.Errorf("ListenEcho(%+v) = %v, want an error naming the setting", o, err)
		}
	}
}

// TestSocketOptions checks the sockets as the kernel sees them, since the code relies on Go
// defaults it does not set itself: TCP_NODELAY on both ends, no keepalive, and plain TCP
// rather than Multipath TCP (Go's listener default since 1.24).
func TestSocketOptions(t *testing.T) {
	ctx := context.Background()
	ln, err := listenConfig().Listen(ctx, "tcp", net.JoinHostPort(loopback, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	r, err := newRun(ctx, "rr", ClientOptions{Target: loopback, Port: ln.Addr().(*net.TCPAddr).Port, Duration: time.Second, Size: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	client, err := r.dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()

	if got := sockopt(t, ln.(*net.TCPListener), syscall.SOL_SOCKET, syscall.SO_PROTOCOL); got != syscall.IPPROTO_TCP {
		t.Errorf("listener protocol = %d, want IPPROTO_TCP (%d), not MPTCP (262)", got, syscall.IPPROTO_TCP)
	}
	for name, c := range map[string]net.Conn{"client": client, "server": server} {
		sc := c.(syscall.Conn)
		if got := sockopt(t, sc, syscall.IPPROTO_TCP, syscall.TCP_NODELAY); got == 0 {
			t.Errorf("%s: TCP_NODELAY off", name)
		}
		if got := sockopt(t, sc, syscall.SOL_SOCKET, syscall.SO_KEEPALIVE); got != 0 {
			t.Errorf("%s: SO_KEEPALIVE on", name)
		}
		if got := sockopt(t, sc, syscall.SOL_SOCKET, syscall.SO_PROTOCOL); got != syscall.IPPROTO_TCP {
			t.Errorf("%s: protocol = %d, want IPPROTO_TCP", name, got)
		}
	}
}

func sockopt(t *testing.T, c syscall.Conn, level, opt int) int {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var v int
	var serr error
	if err := rc.Control(func(fd uintptr) { v, serr = syscall.GetsockoptInt(int(fd), level, opt) }); err != nil {
		t.Fatal(err)
	}
	if serr != nil {
		t.Fatal(serr)
	}
	return v
}

func TestIsTemporaryAccept(t *testing.T) {
	emfile := &net.OpError{Op: "accept", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	if !isTemporaryAccept(emfile) {
		t.Error("EMFILE not temporary")
	}
	if isTemporaryAccept(net.ErrClosed) || isTemporaryAccept(errors.New("x")) {
		t.Error("a closed listener or an unknown error counted as temporary")
	}
}
