package external

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/cluster/pki"
)

// freeAddr returns a loopback address nothing listens on.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// testToken is the token of the agents the tests start.
const testToken = "s3cret"

// serve starts a real agent with the test token and returns a client of it.
func serve(t *testing.T) Agent {
	return serveWith(t, ServeOptions{})
}

// serveWith starts a real agent with o (its listen address and token filled in).
func serveWith(t testing.TB, o ServeOptions) Agent {
	t.Helper()
	o.Listen, o.Token = freeAddr(t), testToken
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, o) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	for i := 0; i < 100; i++ {
		if c, err := net.Dial("tcp", o.Listen); err == nil {
			c.Close()
			return Agent{Control: o.Listen, Token: testToken}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("agent never listened on %s", o.Listen)
	return Agent{}
}

func TestWhoAmISeesTheSource(t *testing.T) {
	a := serve(t)
	ip, err := a.WhoAmI(context.Background())
	if err != nil || ip != "127.0.0.1" {
		t.Fatalf("WhoAmI = %q, %v; want 127.0.0.1", ip, err)
	}
}

// TestServersStartOnceAndStop runs a real iperf3 server through the agent.
func TestServersStartOnceAndStop(t *testing.T) {
	a := serve(t)
	_, p, _ := net.SplitHostPort(freeAddr(t))
	port, _ := strconv.Atoi(p)
	ctx := context.Background()
	req := []Server{{Workload: "tcp-stream/1", Port: port}}
	if _, err := a.StartServers(ctx, req); err != nil {
		t.Fatalf("StartServers: %v", err)
	}
	if _, err := a.StartServers(ctx, req); err != nil {
		t.Fatalf("StartServers again (the same server is kept): %v", err)
	}
	if c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", p)); err != nil {
		t.Fatalf("iperf3 server not listening: %v", err)
	} else {
		c.Close()
	}
	if err := a.StopServers(ctx); err != nil {
		t.Fatalf("StopServers: %v", err)
	}
	if c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", p), time.Second); err == nil {
		c.Close()
		t.Error("server still listening after StopServers")
	}
}

func TestBadServerRequestsNameTheField(t *testing.T) {
	a := serve(t)
	for _, c := range []struct {
		req  Server
		want string
	}{
		{Server{Workload: "tcp-stream/1", Port: 80}, "port: expected 1024-65535 (or 0: the agent picks one), got 80"},
		{Server{Workload: "bogus/1", Port: 30000}, `workload "bogus/1"`},
	} {
		_, err := a.StartServers(context.Background(), []Server{c.req})
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
	a := serve(t)
	got, err := a.StartServers(context.Background(), []Server{{Workload: "tcp-rr/64B", Port: 0}, {Workload: "tcp-rr/64B", Port: 0}})
	if err != nil {
		t.Fatalf("StartServers: %v", err)
	}
	if got[0].Port == firstFreePort || got[0].Port == got[1].Port || got[0].Port < firstFreePort || got[1].Port > lastFreePort {
		t.Errorf("picked ports %+v: want two distinct ports of %d-%d past the one in TIME_WAIT", got, firstFreePort, lastFreePort)
	}
	if err := a.StopServers(context.Background()); err != nil {
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

// TestRequestsWithoutTheTokenStartNothing asks an agent without its token, and with a wrong
// one, to start a server: both are refused and nothing listens on the port.
func TestRequestsWithoutTheTokenStartNothing(t *testing.T) {
	a := serve(t)
	_, p, _ := net.SplitHostPort(freeAddr(t))
	port, _ := strconv.Atoi(p)
	for _, token := range []string{"", "wrong", testToken + "x"} {
		stranger := Agent{Control: a.Control, Token: token}
		_, err := stranger.StartServers(context.Background(), []Server{{Workload: "tcp-stream/1", Port: port}})
		if err == nil || !strings.Contains(err.Error(), "401 Unauthorized: missing or wrong token") {
			t.Errorf("token %q: StartServers = %v, want 401", token, err)
		}
		if _, err := stranger.WhoAmI(context.Background()); err == nil || !strings.Contains(err.Error(), "401") {
			t.Errorf("token %q: WhoAmI = %v, want 401", token, err)
		}
		if err := stranger.StopServers(context.Background()); err == nil || !strings.Contains(err.Error(), "401") {
			t.Errorf("token %q: StopServers = %v, want 401", token, err)
		}
	}
	if ok, err := listening(port); err != nil || ok {
		t.Errorf("port %d listening after refused requests: %v %v", port, ok, err)
	}
	if err := Serve(context.Background(), ServeOptions{Listen: freeAddr(t)}); err == nil || !strings.Contains(err.Error(), "token") {
		t.Errorf("an agent without a token must not start: %v", err)
	}
}

// TestServersStopWhenTheRunIsGone starts a real server, then sends nothing: after the idle
// timeout the agent stops it, as it would for a run that was killed.
func TestServersStopWhenTheRunIsGone(t *testing.T) {
	a := serveWith(t, ServeOptions{IdleTimeout: 300 * time.Millisecond})
	got, err := a.StartServers(context.Background(), []Server{{Workload: "tcp-rr/64B", Port: 0}})
	if err != nil {
		t.Fatalf("StartServers: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		ok, err := listening(got[0].Port)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("server on port %d still listening 10 s after a 300 ms idle timeout", got[0].Port)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestServersAliveAreBounded refuses a request that would run more servers than the bound,
// starting none of them.
func TestServersAliveAreBounded(t *testing.T) {
	a := serveWith(t, ServeOptions{MaxServers: 2})
	ctx := context.Background()
	if _, err := a.StartServers(ctx, []Server{{Workload: "tcp-rr/64B", Port: 0}}); err != nil {
		t.Fatalf("first server: %v", err)
	}
	_, err := a.StartServers(ctx, []Server{{Workload: "tcp-rr/64B", Port: 0}, {Workload: "tcp-rr/64B", Port: 0}})
	if err == nil || !strings.Contains(err.Error(), "1 running and 2 more asked for, at most 2 at once") {
		t.Errorf("over the bound: %v", err)
	}
	if err := a.StopServers(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.StartServers(ctx, []Server{{Workload: "tcp-rr/64B", Port: 0}, {Workload: "tcp-rr/64B", Port: 0}}); err != nil {
		t.Errorf("two servers after a stop: %v", err)
	}
	_ = a.StopServers(ctx)
}

func TestTokenFileIsMadeOnceAndKept(t *testing.T) {
	path := filepath.Join(t.TempDir(), "token")
	tok, created, err := TokenFile(path)
	if err != nil || !created || len(tok) != 2*tokenBytes {
		t.Fatalf("TokenFile (new) = %q, %v, %v", tok, created, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode: %v %v", fi, err)
	}
	again, created, err := TokenFile(path)
	if err != nil || created || again != tok {
		t.Errorf("TokenFile (existing) = %q, %v, %v; want %q", again, created, err, tok)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	_ = os.WriteFile(empty, []byte("\n"), 0o600)
	if _, _, err := TokenFile(empty); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("empty token file: %v", err)
	}
}

// tlsAgent starts an agent serving a certificate for 127.0.0.1 signed by a new CA, and returns
// a client of it trusting that CA, and the PEM of another CA.
func tlsAgent(t testing.TB) (a Agent, otherCA []byte) {
	return tlsAgentWith(t, ServeOptions{})
}

// tlsAgentWith is tlsAgent with o's other options (its log).
func tlsAgentWith(t testing.TB, o ServeOptions) (a Agent, otherCA []byte) {
	t.Helper()
	dir := t.TempDir()
	ca, err := pki.NewCA("cnb-test-agent-ca")
	if err != nil {
		t.Fatal(err)
	}
	pair, err := ca.Issue(pki.Request{CommonName: "agent", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Server: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := pair.Write(dir, "agent"); err != nil {
		t.Fatal(err)
	}
	other, err := pki.NewCA("cnb-test-other-ca")
	if err != nil {
		t.Fatal(err)
	}
	o.TLSCert, o.TLSKey = filepath.Join(dir, "agent.crt"), filepath.Join(dir, "agent.key")
	a = serveWith(t, o)
	a.CA = ca.CertPEM
	return a, other.CertPEM
}

// TestTLSAgentAnswersOnlyClientsTrustingItsCA serves the API over TLS: a client trusting the
// agent's CA is answered, one trusting another CA refuses the certificate, and plain HTTP gets
// nothing but a refusal (so a token is never sent in the clear to a TLS agent). Over TLS the
// token is still required.
func TestTLSAgentAnswersOnlyClientsTrustingItsCA(t *testing.T) {
	a, otherCA := tlsAgent(t)
	ctx := context.Background()
	if ip, err := a.WhoAmI(ctx); err != nil || ip != "127.0.0.1" {
		t.Fatalf("WhoAmI over TLS = %q, %v; want 127.0.0.1", ip, err)
	}
	wrongCA := Agent{Control: a.Control, Token: a.Token, CA: otherCA}
	if _, err := wrongCA.WhoAmI(ctx); err == nil || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
		t.Errorf("a client trusting another CA: %v, want the certificate refused", err)
	}
	plain := Agent{Control: a.Control, Token: a.Token}
	if _, err := plain.WhoAmI(ctx); err == nil || !strings.Contains(err.Error(), "400 Bad Request") {
		t.Errorf("plain HTTP to a TLS agent: %v, want a 400", err)
	}
	_, p, _ := net.SplitHostPort(freeAddr(t))
	port, _ := strconv.Atoi(p)
	noToken := Agent{Control: a.Control, CA: a.CA}
	if _, err := noToken.StartServers(ctx, []Server{{Workload: "tcp-stream/1", Port: port}}); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("TLS without the token: %v, want a 401", err)
	}
	if ok, err := listening(port); err != nil || ok {
		t.Errorf("port %d listening after a refused request: %v %v", port, ok, err)
	}
	if _, err := (Agent{Control: a.Control, Token: a.Token, CA: []byte("not PEM")}).WhoAmI(ctx); err == nil || !strings.Contains(err.Error(), "ca-cert: expected a PEM") {
		t.Errorf("a CA that is not PEM: %v", err)
	}
}

// TestTLSSettingsAreChecked refuses half a TLS configuration and a key that is not there,
// naming the setting, before listening.
func TestTLSSettingsAreChecked(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		o    ServeOptions
		want string
	}{
		{ServeOptions{TLSCert: "a.crt"}, "tls-key: expected the key"},
		{ServeOptions{TLSKey: "a.key"}, "tls-cert: expected the certificate"},
		{ServeOptions{TLSCert: filepath.Join(dir, "none.crt"), TLSKey: filepath.Join(dir, "none.key")}, "tls-cert: " + filepath.Join(dir, "none.crt") + ": open"},
	} {
		c.o.Listen, c.o.Token = freeAddr(t), testToken
		if err := Serve(context.Background(), c.o); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
}
