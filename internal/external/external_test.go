package external

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// freeAddr returns a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// serve starts a real agent and returns its control address.
func serve(t *testing.T) string {
	t.Helper()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ServeOptions{Listen: addr}) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	for i := 0; i < 100; i++ {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return addr
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("agent never listened on %s", addr)
	return ""
}

func TestWhoAmISeesTheSource(t *testing.T) {
	addr := serve(t)
	ip, err := WhoAmI(context.Background(), addr)
	if err != nil || ip != "127.0.0.1" {
		t.Fatalf("WhoAmI = %q, %v; want 127.0.0.1", ip, err)
	}
}

// TestServersStartOnceAndStop runs a real iperf3 server through the agent.
func TestServersStartOnceAndStop(t *testing.T) {
	addr := serve(t)
	_, p, _ := net.SplitHostPort(freeAddr(t))
	port, _ := strconv.Atoi(p)
	ctx := context.Background()
	req := []Server{{Workload: "tcp-stream/1", Port: port}}
	if err := StartServers(ctx, addr, req); err != nil {
		t.Fatalf("StartServers: %v", err)
	}
	if err := StartServers(ctx, addr, req); err != nil {
		t.Fatalf("StartServers again (the same server is kept): %v", err)
	}
	if c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", p)); err != nil {
		t.Fatalf("iperf3 server not listening: %v", err)
	} else {
		c.Close()
	}
	if err := StopServers(ctx, addr); err != nil {
		t.Fatalf("StopServers: %v", err)
	}
	if c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", p), time.Second); err == nil {
		c.Close()
		t.Error("server still listening after StopServers")
	}
}

func TestBadServerRequestsNameTheField(t *testing.T) {
	addr := serve(t)
	for _, c := range []struct {
		req  Server
		want string
	}{
		{Server{Workload: "tcp-stream/1", Port: 80}, "port: expected 1024-65535, got 80"},
		{Server{Workload: "bogus/1", Port: 30000}, `workload "bogus/1"`},
	} {
		err := StartServers(context.Background(), addr, []Server{c.req})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("StartServers(%+v) = %v, want an error containing %q", c.req, err, c.want)
		}
	}
}

func TestParseServers(t *testing.T) {
	got, err := ParseServers([]string{"tcp-rr/1B=25201", "tcp-stream/4=25202"})
	if err != nil || len(got) != 2 || got[0] != (Server{"tcp-rr/1B", 25201}) || got[1].Port != 25202 {
		t.Errorf("ParseServers = %+v, %v", got, err)
	}
	for _, bad := range []string{"tcp-rr/1B", "=25201", "tcp-rr/1B=x"} {
		if _, err := ParseServers([]string{bad}); err == nil || !strings.Contains(err.Error(), "WORKLOAD=PORT") {
			t.Errorf("ParseServers(%q) = %v, want an error naming WORKLOAD=PORT", bad, err)
		}
	}
}
