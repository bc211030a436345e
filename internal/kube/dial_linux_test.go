package kube

import (
	"context"
	"net"
	"testing"

	"golang.org/x/sys/unix"
)

// TestAPIDialerSetsTheUserTimeout dials a loopback listener as the client dials the API server
// and reads the connection's TCP_USER_TIMEOUT back from the kernel.
func TestAPIDialerSetsTheUserTimeout(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	conn, err := apiDialer().DialContext(context.Background(), "tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	raw, err := conn.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var got int
	var sockErr error
	if err := raw.Control(func(fd uintptr) {
		got, sockErr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT)
	}); err != nil || sockErr != nil {
		t.Fatal(err, sockErr)
	}
	if want := int(userTimeout.Milliseconds()); got != want {
		t.Errorf("TCP_USER_TIMEOUT %d ms, want %d", got, want)
	}
}
