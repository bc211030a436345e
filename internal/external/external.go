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

// ParseServers reads WORKLOAD=PORT specs.
func ParseServers(specs []string) ([]Server, error) {
	out := make([]Server, 0, len(specs))
	for _, s := range specs {
		id, p, ok := strings.Cut(s, "=")
		port, err := strconv.Atoi(p)
		if !ok || id == "" || err != nil {
			return nil, fmt.Errorf("--start %q: expected WORKLOAD=PORT, e.g. tcp-stream/1x=25201", s)
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
	m := &serverSet{self: o.Self, log: o.Log, byPort: map[int]*child{}}
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
		if err := m.ensure(r.Context(), req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, "%d servers running\n", len(req))
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
}

// child is one running server.
type child struct {
	argv   string
	cmd    *exec.Cmd
	done   chan struct{}
	stderr *bytes.Buffer
}

// ensure starts each requested server unless the same one already runs on its port (a second
// run, or a second target on the same external host), replacing a different one, and waits
// until each accepts connections.
func (m *serverSet) ensure(ctx context.Context, req []Server) error {
	if len(req) > maxServers {
		return fmt.Errorf("servers: expected at most %d, got %d", maxServers, len(req))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range req {
		argv, err := m.argv(s)
		if err != nil {
			return err
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
			return err
		}
		m.byPort[s.Port] = c
		if err := c.waitListening(ctx, s.Port); err != nil {
			return fmt.Errorf("server %s on port %d: %w", s.Workload, s.Port, err)
		}
		fmt.Fprintf(m.log, "started %s\n", key)
	}
	return nil
}

// argv is the server command of one request, the one a server pod would run.
func (m *serverSet) argv(s Server) ([]string, error) {
	if s.Port < 1024 || s.Port > 65535 {
		return nil, fmt.Errorf("port: expected 1024-65535, got %d", s.Port)
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
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	// The servers die with the agent, however it ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	c := &child{argv: strings.Join(argv, " "), cmd: cmd, done: make(chan struct{}), stderr: &stderr}
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

// waitListening polls the port on loopback: every server listens on every address.
func (c *child) waitListening(ctx context.Context, port int) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		if !c.alive() {
			return fmt.Errorf("exited: %s", strings.TrimSpace(c.stderr.String()))
		}
		conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
		if err == nil {
			return conn.Close()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not listening after 10s: %w", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
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

// StartServers asks the external agent at control to run the servers.
func StartServers(ctx context.Context, control string, servers []Server) error {
	body, _ := json.Marshal(servers)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+control+"/servers", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if _, err := do(req); err != nil {
		return fmt.Errorf("start servers on the external host %s: %w", control, err)
	}
	return nil
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

// do sends req and returns the body of a 200 answer, or an error carrying the agent's message.
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
