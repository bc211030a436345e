package external

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
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
	if _, err := StartServers(ctx, addr, req); err != nil {
		t.Fatalf("StartServers: %v", err)
	}
	if _, err := StartServers(ctx, addr, req); err != nil {
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
		{Server{Workload: "tcp-stream/1", Port: 80}, "port: expected 1024-65535 (or 0: the agent picks one), got 80"},
		{Server{Workload: "bogus/1", Port: 30000}, `workload "bogus/1"`},
	} {
		_, err := StartServers(context.Background(), addr, []Server{c.req})
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

// TestPickedPortsAvoidTimeWait leaves a connection in TIME_WAIT on the first port the agent
// would pick and expects a sockperf server (which cannot bind such a port) on another one.
func TestPickedPortsAvoidTimeWait(t *testing.T) {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(firstFreePort)))
	if err != nil {
		t.Fatalf("port %d: %v", firstFreePort, err)
	}
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close() // the server closes first: TIME_WAIT stays on its side, port firstFreePort
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	_, _ = c.Read(make([]byte, 1))
	c.Close()
	ln.Close()
	addr := serve(t)
	got, err := StartServers(context.Background(), addr, []Server{{Workload: "tcp-rr/64B", Port: 0}, {Workload: "tcp-rr/64B", Port: 0}})
	if err != nil {
		t.Fatalf("StartServers: %v", err)
	}
	if got[0].Port == firstFreePort || got[0].Port == got[1].Port || got[0].Port < firstFreePort || got[1].Port > lastFreePort {
		t.Errorf("picked ports %+v: want two distinct ports of %d-%d past the one in TIME_WAIT", got, firstFreePort, lastFreePort)
	}
	if err := StopServers(context.Background(), addr); err != nil {
		t.Error(err)
	}
}

func TestGetSendsTheHostAndWantsA200(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host != "w40.split.cnibench.test" {
			http.Error(w, "no route for "+r.Host, http.StatusNotFound)
			return
		}
		fmt.Fprintln(w, "cnibench-backend-a-0")
	}))
	defer srv.Close()
	if body, err := Get(context.Background(), srv.URL, "w40.split.cnibench.test"); err != nil || body != "cnibench-backend-a-0" {
		t.Errorf("Get = %q, %v", body, err)
	}
	if _, err := Get(context.Background(), srv.URL, "other"); err == nil || !strings.Contains(err.Error(), "404 Not Found: no route for other") {
		t.Errorf("Get with another host: %v", err)
	}
}
