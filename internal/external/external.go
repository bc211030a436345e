// Package external is the external side of the egress paths: a machine outside the cluster
// (on the local cluster, the lab's external namespace) runs `cnibench agent serve`, whose small
// HTTP API starts the run's servers (the same commands server pods run) and tells a client the
// source address its connection arrived from, which is how a run proves which SNAT its egress
// traffic took. The client functions run in the run's client pod, which reaches the external
// side whenever the egress paths can.
package external

import (
	"cmp"
	"context"
	"crypto/subtle"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/setting"
)

// Server is one server the external agent is asked to run: a workload's server
// command on a port.
type Server struct {
	Workload string `json:"workload"` // engine workload ID
	Port     int    `json:"port"`
}

// ServeOptions configures the external agent.
type ServeOptions struct {
	// Listen is the control API's host:port.
	Listen string
	// Self is the cnibench binary that runs the "cnibench" servers (the echo server).
	Self string
	// Log receives one line per started or stopped server; nil discards them.
	Log io.Writer
	// Token is the secret every request must carry (Authorization: Bearer TOKEN); required.
	// The agent starts processes on request: without it, anyone reaching its port could.
	Token string
	// IdleTimeout stops every server once no request with the token has come for this long,
	// so that a run that died leaves nothing running; 0 means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// MaxServers bounds the servers alive at once; 0 means DefaultMaxServers.
	MaxServers int
	// TLSCert and TLSKey are PEM files of the agent's certificate and key: given, the API is
	// HTTPS (TLS 1.2 or newer), and clients must trust the CA that signed the certificate.
	// Without them it is plain HTTP, whose token anyone on the path can read.
	TLSCert, TLSKey string
}

// Defaults of ServeOptions. A run asks the agent for the source address before every egress
// sample, so half an hour without a request means the run is gone.
const (
	DefaultIdleTimeout = 30 * time.Minute
	DefaultMaxServers  = 1024
)

// DefaultServePort is the external agent's default control port (the local cluster's uses it).
const DefaultServePort = 25199

// ParseServers reads WORKLOAD=PORT specs (port 0: the agent picks one).
func ParseServers(specs []string) ([]Server, error) {
	out := make([]Server, 0, len(specs))
	for _, s := range specs {
		id, p, ok := strings.Cut(s, "=")
		port, err := strconv.Atoi(p)
		if !ok || id == "" || err != nil {
			return nil, &setting.Error{Name: "start", Value: strconv.Quote(s), Want: "expected WORKLOAD=PORT, e.g. tcp-stream/1=25201"}
		}
		out = append(out, Server{Workload: id, Port: port})
	}
	return out, nil
}

// maxServers bounds one request: a run has a few workloads per pair.
const maxServers = 512

// Bounds of the control API, whose port may be reachable from a network others share: a
// client that sends nothing, or a request a byte at a time, holds a connection for the
// timeouts at most, and no client can make the agent hold more than maxConns connections or
// buffer more than the size bounds per request. A run's requests are a few hundred bytes,
// sent at once.
const (
	headerTimeout  = 10 * time.Second // the TLS handshake and the request's header
	bodyTimeout    = 10 * time.Second // its body, from the end of the header
	idleTimeout    = 30 * time.Second // between two requests on one connection
	maxHeaderBytes = 16 << 10
	maxBodyBytes   = 1 << 20
	maxConns       = 2048
)

// Serve runs the external agent until ctx ends, then stops every server it started. Every
// request must carry the token; servers stop when no such request came for the idle timeout.
func Serve(ctx context.Context, o ServeOptions) error {
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Token == "" {
		return errors.New("token: expected the secret clients must present")
	}
	o.IdleTimeout = cmp.Or(o.IdleTimeout, DefaultIdleTimeout)
	o.MaxServers = cmp.Or(o.MaxServers, DefaultMaxServers)
	tlsConfig, err := o.tlsConfig()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return &setting.Error{Name: "listen", Value: o.Listen, Err: err}
	}
	ln = newLimitListener(ln, maxConns)
	scheme := "http"
	if tlsConfig != nil {
		ln, scheme = tls.NewListener(ln, tlsConfig), "https"
	}
	m := &serverSet{self: o.Self, log: o.Log, byPort: map[int]*child{}, next: firstFreePort, max: o.MaxServers}
	m.touch()
	defer m.stopAll()
	// The server's own errors (a client refusing the certificate, plain HTTP to TLS) are the
	// operator's to see, beside the agent's other lines, at a bounded rate.
	srv := &http.Server{Handler: m.routes(o.Token), ReadHeaderTimeout: headerTimeout, IdleTimeout: idleTimeout,
		MaxHeaderBytes: maxHeaderBytes, ErrorLog: log.New(newRateLimitedLog(o.Log, errorLogEvery, errorLogBurst), "", 0)}
	fmt.Fprintf(o.Log, "external agent listening on %s://%s (servers stop after %s without a request)\n", scheme, ln.Addr(), o.IdleTimeout)
	go m.expire(ctx, o.IdleTimeout)
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// tlsConfig loads the agent's certificate, or returns nil for plain HTTP.
func (o ServeOptions) tlsConfig() (*tls.Config, error) { return TLSConfig(o.TLSCert, o.TLSKey) }

// TLSConfig is the server side of TLS 1.2 or newer with the certificate and key in the PEM
// files cert and key, or nil (plain HTTP) when both are empty; the errors name the settings
// tls-cert and tls-key. `cnibench serve` serves HTTPS with it too.
func TLSConfig(cert, key string) (*tls.Config, error) {
	switch {
	case cert == "" && key == "":
		return nil, nil
	case cert == "":
		return nil, &setting.Error{Name: "tls-cert", Want: "expected the certificate of the key given by tls-key"}
	case key == "":
		return nil, &setting.Error{Name: "tls-key", Want: "expected the key of the certificate given by tls-cert"}
	}
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		return nil, &setting.Error{Name: "tls-cert", Value: cert, Err: err}
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
}

// routes is the control API, every route behind the token.
func (m *serverSet) routes(token string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /whoami", func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		fmt.Fprintln(w, host)
	})
	mux.HandleFunc("POST /servers", func(w http.ResponseWriter, r *http.Request) {
		req, status, err := decodeServers(w, r)
		if err != nil {
			http.Error(w, err.Error(), status)
			return
		}
		// The body is read: starting servers may take longer than bodyTimeout, and the
		// connection's read deadline would cancel the request's context.
		_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
		got, err := m.ensure(r.Context(), req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		_ = json.NewEncoder(w).Encode(got)
	})
	mux.HandleFunc("DELETE /servers", func(w http.ResponseWriter, _ *http.Request) {
		m.stopAll()
		fmt.Fprintln(w, "stopped")
	})
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Also bounds the body the server reads after a refusal, to reuse the connection.
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(bodyTimeout))
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			http.Error(w, "missing or wrong token: pass the one the agent was started with (cnibench agent serve --token-file)", http.StatusUnauthorized)
			return
		}
		m.touch()
		mux.ServeHTTP(w, r)
	})
}

// decodeServers reads the list of servers a request asks for, refusing a body over
// maxBodyBytes before reading the rest of it, fields it does not know and anything after the
// list; the status is the answer to an error.
func decodeServers(w http.ResponseWriter, r *http.Request) ([]Server, int, error) {
	const want = "body: expected a JSON list of {workload, port}"
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	dec.DisallowUnknownFields()
	var req []Server
	err := dec.Decode(&req)
	if err == nil && dec.Decode(&json.RawMessage{}) != io.EOF {
		err = errors.New("more after the list")
	}
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("%s of at most %d bytes, got more", want, maxBodyBytes)
	case err != nil:
		return nil, http.StatusBadRequest, fmt.Errorf("%s: %w", want, err)
	}
	return req, 0, nil
}

// touch records a request with the token: the run is alive.
func (m *serverSet) touch() { m.seen.Store(time.Now().UnixNano()) }

// expire stops every server once no request came for idle, until ctx ends.
func (m *serverSet) expire(ctx context.Context, idle time.Duration) {
	tick := time.NewTicker(min(max(idle/10, 10*time.Millisecond), 10*time.Second))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		quiet := time.Since(time.Unix(0, m.seen.Load()))
		m.mu.Lock()
		n := len(m.byPort)
		m.mu.Unlock()
		if n > 0 && quiet > idle {
			fmt.Fprintf(m.log, "no request for %s: stopping %d servers\n", quiet.Round(time.Second), n)
			m.stopAll()
		}
	}
}

// serverSet is the servers the agent runs, by port.
type serverSet struct {
	self   string
	log    io.Writer
	mu     sync.Mutex
	byPort map[int]*child
	next   int // where freePort looks first
	max    int // servers alive at once
	// seen is the last request with the token (Unix nanoseconds); apart from mu, which a
	// request starting servers holds for seconds.
	seen atomic.Int64
}

// child is one running server.
type child struct {
	argv   string
	cmd    *exec.Cmd
	done   chan struct{}
	output *tailBuffer
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// ensure starts each requested server unless the same one already runs on its port (a second
// run, or a second target on the same external host), replacing a different one, and waits
// until each accepts connections.
func (m *serverSet) ensure(ctx context.Context, req []Server) ([]Server, error) {
	if len(req) > maxServers {
		return nil, fmt.Errorf("servers: expected at most %d, got %d", maxServers, len(req))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if n := m.added(req); len(m.byPort)+n > m.max {
		return nil, fmt.Errorf("servers: %d running and %d more asked for, at most %d at once (agent serve --max-servers): stop them first (agent external-servers --stop)", len(m.byPort), n, m.max)
	}
	out := make([]Server, 0, len(req))
	for _, s := range req {
		if s.Port == 0 {
			port, err := m.freePort(portsOf(s))
			if err != nil {
				return nil, err
			}
			s.Port = port
		}
		out = append(out, s)
		argv, err := m.argv(s)
		if err != nil {
			return nil, err
		}
		key := strings.Join(argv, " ")
		if c, ok := m.byPort[s.Port]; ok {
			if c.argv == key && c.alive() {
				continue
			}
			c.stop()
			delete(m.byPort, s.Port)
		}
		c, err := m.start(argv)
		if err != nil {
			return nil, err
		}
		m.byPort[s.Port] = c
		if err := c.waitListening(ctx, s.Port); err != nil {
			return nil, fmt.Errorf("server %s on port %d: %w", s.Workload, s.Port, err)
		}
		fmt.Fprintf(m.log, "started %s\n", key)
	}
	return out, nil
}

// added counts the servers a request would add: those on a port the agent picks or on one
// where none runs.
func (m *serverSet) added(req []Server) int {
	n := 0
	for _, s := range req {
		if _, ok := m.byPort[s.Port]; s.Port == 0 || !ok {
			n++
		}
	}
	return n
}

// The ports the agent picks for servers that ask for none.
const (
	firstFreePort = 26000
	lastFreePort  = 28999
)

// freePort picks the next n ports of the agent's range that no server of its own holds and that a
// socket without SO_REUSEADDR can bind, and returns the first: sockperf's server sets no
// SO_REUSEADDR, so a port whose last connections still sit in TIME_WAIT (the previous run's, for
// a minute) would fail it. n is 2 for a server with a data port beside its own (netperf's).
func (m *serverSet) freePort(n int) (int, error) {
	for range lastFreePort - firstFreePort + 1 {
		p := m.next
		m.next += n
		if m.next+n-1 > lastFreePort || m.next < firstFreePort {
			m.next = firstFreePort
		}
		if p < firstFreePort || p+n-1 > lastFreePort {
			continue
		}
		free := true
		for q := p; q < p+n; q++ {
			_, taken := m.byPort[q]
			free = free && !taken && bindable(q)
		}
		if free {
			return p, nil
		}
	}
	return 0, fmt.Errorf("no free port in %d-%d", firstFreePort, lastFreePort)
}

// portsOf is how many ports a requested server takes: 2 with a data port (engine.DataPorter).
func portsOf(s Server) int {
	w, err := engine.ParseID(s.Workload)
	if err != nil {
		return 1 // argv refuses it
	}
	w.Duration = time.Second
	if e, err := engine.For(w); err == nil {
		if _, ok := e.(engine.DataPorter); ok {
			return 2
		}
	}
	return 1
}

// bindable reports whether a plain TCP socket can bind port on every address.
func bindable(port int) bool {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer syscall.Close(fd)
	return syscall.Bind(fd, &syscall.SockaddrInet4{Port: port}) == nil
}

// argv is the server command of one request, the one a server pod would run.
func (m *serverSet) argv(s Server) ([]string, error) {
	if s.Port < 1024 || s.Port > 65535 {
		return nil, fmt.Errorf("port: expected 1024-65535 (or 0: the agent picks one), got %d", s.Port)
	}
	w, err := engine.ParseID(s.Workload)
	if err != nil {
		return nil, fmt.Errorf("workload %q: %w", s.Workload, err)
	}
	w.Duration = time.Second // servers do not depend on it; validation needs one
	eng, err := engine.For(w)
	if err != nil {
		return nil, err
	}
	argv := eng.ServerArgv(w, s.Port)
	if argv == nil {
		return nil, fmt.Errorf("workload %s: has no server", s.Workload)
	}
	if argv[0] == engine.NameCnibench && m.self != "" {
		argv[0] = m.self
	}
	return argv, nil
}

func (m *serverSet) start(argv []string) (*child, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	// Tools report start-up failures on either stream (sockperf on stdout); the last bytes are
	// kept for the error, never the whole log of a server that runs for hours.
	out := &tailBuffer{max: 4096}
	cmd.Stdout, cmd.Stderr = out, out
	// The servers die with the agent, however it ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	c := &child{argv: strings.Join(argv, " "), cmd: cmd, done: make(chan struct{}), output: out}
	go func() {
		_ = cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

func (c *child) alive() bool {
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// waitListening waits until a socket listens on port, as the kernel's socket table shows it. A
// probe connection would not do: iperf3 takes any connection for a test, and after that one
// fails it closes and reopens its listening socket, so a client that connects in that moment
// (a run's first sample) is refused.
func (c *child) waitListening(ctx context.Context, port int) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		if !c.alive() {
			return fmt.Errorf("exited: %s", strings.TrimSpace(c.output.String()))
		}
		ok, err := listening(port)
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return errors.New("not listening after 10s")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// listening reports whether a TCP socket listens on port, on any address of either family.
func listening(port int) (bool, error) {
	suffix := fmt.Sprintf(":%04X", port)
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(table)
		if errors.Is(err, fs.ErrNotExist) {
			continue // a kernel without IPv6
		}
		if err != nil {
			return false, fmt.Errorf("read %s: %w", table, err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			// sl local_address rem_address st ...; st 0A is LISTEN.
			f := strings.Fields(line)
			if len(f) > 3 && f[3] == "0A" && strings.HasSuffix(f[1], suffix) {
				return true, nil
			}
		}
	}
	return false, nil
}

func (c *child) stop() {
	if !c.alive() {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(3 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

func (m *serverSet) stopAll() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for port, c := range m.byPort {
		c.stop()
		delete(m.byPort, port)
	}
}

// SelfBinary is the running cnibench binary, for the agent's own servers.
func SelfBinary() string {
	self, err := os.Executable()
	if err != nil {
		return engine.NameCnibench
	}
	return self
}
