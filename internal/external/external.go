// Package external is the external side of the egress paths: a machine outside the cluster
// (on the local cluster, the lab's external namespace) runs `cnibench agent serve`, whose small
// HTTP API starts the run's servers (the same commands server pods run) and tells a client the
// source address its connection arrived from, which is how a run proves which SNAT its egress
// traffic took. The client functions run in the run's client pod, which reaches the external
// side whenever the egress paths can.
package external

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cnibench/cnibench/internal/engine"
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
}

// DefaultServePort is the external agent's default control port (the local cluster's uses it).
const DefaultServePort = 25199

// ParseServers reads WORKLOAD=PORT specs (port 0: the agent picks one).
func ParseServers(specs []string) ([]Server, error) {
	out := make([]Server, 0, len(specs))
	for _, s := range specs {
		id, p, ok := strings.Cut(s, "=")
		port, err := strconv.Atoi(p)
		if !ok || id == "" || err != nil {
			return nil, fmt.Errorf("--start %q: expected WORKLOAD=PORT, e.g. tcp-stream/1=25201", s)
		}
		out = append(out, Server{Workload: id, Port: port})
	}
	return out, nil
}

// maxServers bounds one request: a run has a few workloads per pair.
const maxServers = 512

// Serve runs the external agent until ctx ends, then stops every server it started.
func Serve(ctx context.Context, o ServeOptions) error {
	if o.Log == nil {
		o.Log = io.Discard
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", o.Listen, err)
	}
	m := &serverSet{self: o.Self, log: o.Log, byPort: map[int]*child{}, next: firstFreePort}
	defer m.stopAll()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /whoami", func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		fmt.Fprintln(w, host)
	})
	mux.HandleFunc("POST /servers", func(w http.ResponseWriter, r *http.Request) {
		var req []Server
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
			http.Error(w, "body: expected a JSON list of {workload, port}: "+err.Error(), http.StatusBadRequest)
			return
		}
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
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(o.Log, "external agent listening on %s\n", ln.Addr())
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

// serverSet is the servers the agent runs, by port.
type serverSet struct {
	self   string
	log    io.Writer
	mu     sync.Mutex
	byPort map[int]*child
	next   int // where freePort looks first
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
	out := make([]Server, 0, len(req))
	for _, s := range req {
		if s.Port == 0 {
			port, err := m.freePort()
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

// The ports the agent picks for servers that ask for none.
const (
	firstFreePort = 26000
	lastFreePort  = 28999
)

// freePort picks the next port of the agent's range that no server of its own holds and that a
// socket without SO_REUSEADDR can bind: sockperf's server sets no SO_REUSEADDR, so a port whose
// last connections still sit in TIME_WAIT (the previous run's, for a minute) would fail it.
func (m *serverSet) freePort() (int, error) {
	for range lastFreePort - firstFreePort + 1 {
		p := m.next
		m.next++
		if m.next > lastFreePort || m.next < firstFreePort {
			m.next = firstFreePort
		}
		if p < firstFreePort {
			continue
		}
		if _, taken := m.byPort[p]; !taken && bindable(p) {
			return p, nil
		}
	}
	return 0, fmt.Errorf("no free port in %d-%d", firstFreePort, lastFreePort)
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

// externalClient is the HTTP client of the commands that talk to an external agent: short
// timeouts, and never a proxy (the agent is on the lab's own network).
func externalClient() *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: nil}}
}

// WhoAmI asks the external agent at control (host:port) which address the connection came
// from: the source after every SNAT on the way.
func WhoAmI(ctx context.Context, control string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+control+"/whoami", nil)
	if err != nil {
		return "", err
	}
	body, err := do(req)
	if err != nil {
		return "", fmt.Errorf("ask %s for the source address: %w", control, err)
	}
	ip := strings.TrimSpace(body)
	if net.ParseIP(ip) == nil {
		return "", fmt.Errorf("ask %s for the source address: expected an IP, got %q", control, ip)
	}
	return ip, nil
}

// StartServers asks the external agent at control to run the servers and returns them with
// their ports: a server asking for port 0 gets one the agent picked.
func StartServers(ctx context.Context, control string, servers []Server) ([]Server, error) {
	body, _ := json.Marshal(servers)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+control+"/servers", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := do(req)
	if err != nil {
		return nil, fmt.Errorf("start servers on the external host %s: %w", control, err)
	}
	var got []Server
	if err := json.Unmarshal([]byte(resp), &got); err != nil || len(got) != len(servers) {
		return nil, fmt.Errorf("start servers on the external host %s: expected %d servers with their ports, got %q", control, len(servers), resp)
	}
	return got, nil
}

// StopServers asks the external agent at control to stop every server.
func StopServers(ctx context.Context, control string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, "http://"+control+"/servers", nil)
	if err != nil {
		return err
	}
	if _, err := do(req); err != nil {
		return fmt.Errorf("stop servers on the external host %s: %w", control, err)
	}
	return nil
}

// Get fetches url once, with host as the Host header when set, and returns the body of a 200
// answer: how a run checks from its client pod that a route answers before measuring it.
func Get(ctx context.Context, url, host string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", fmt.Errorf("--url %q: %w", url, err)
	}
	if host != "" {
		req.Host = host
	}
	body, err := do(req)
	if err != nil {
		return "", fmt.Errorf("GET %s (Host %s): %w", url, host, err)
	}
	return strings.TrimSpace(body), nil
}

// do sends req and returns the body of a 200 answer, or an error carrying the server's message.
func do(req *http.Request) (string, error) {
	resp, err := externalClient().Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	return string(b), nil
}

// SelfBinary is the running cnibench binary, for the agent's own servers.
func SelfBinary() string {
	self, err := os.Executable()
	if err != nil {
		return engine.NameCnibench
	}
	return self
}
