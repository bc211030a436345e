// Package agentabuse starts the real external agent (`cnibench agent serve`, built from this
// module, with TLS and a token) and abuses it from a network someone else shares: bad and
// overlong tokens, oversized and malformed bodies, clients that never finish a request, TLS
// handshake garbage and a thousand connections at once, while a client with the token keeps
// making real requests. The agent's memory, descriptors and children are read from /proc.
package agentabuse

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/cluster/pki"
	"github.com/cnibench/cnibench/internal/external"
)

// agentProc is a running `cnibench agent serve` and what a client needs to reach it.
type agentProc struct {
	cmd   *exec.Cmd
	pid   int
	addr  string
	token string
	// legit is the client with the token, trusting the agent's CA: the project's own.
	legit external.Agent
	// tls is a client TLS configuration trusting the agent's CA, for hand-made requests.
	tls *tls.Config
	log *syncBuffer
}

// syncBuffer is the agent's stderr, written by the process and read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// buildCnibench builds the cnibench binary as a user would.
func buildCnibench(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "cnibench")
	build := exec.Command("go", "build", "-o", bin, "github.com/cnibench/cnibench/cmd/cnibench")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build cnibench: %v\n%s", err, out)
	}
	return bin
}

// startAgent runs `cnibench agent serve` on a loopback port with a certificate for
// 127.0.0.1 signed by a new CA and a new token, and waits until it answers.
func startAgent(t *testing.T, bin string) *agentProc {
	t.Helper()
	dir := t.TempDir()
	ca, err := pki.NewCA("cnb-test-abuse-ca")
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
	tokenFile := filepath.Join(dir, "token")
	token, _, err := external.TokenFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.CertPEM)
	p := &agentProc{addr: freeAddr(t), token: token, log: &syncBuffer{},
		tls: &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}}
	p.legit = external.Agent{Control: p.addr, Token: token, CA: ca.CertPEM}
	p.cmd = exec.Command(bin, "agent", "serve", "--listen", p.addr, "--token-file", tokenFile,
		"--tls-cert", filepath.Join(dir, "agent.crt"), "--tls-key", filepath.Join(dir, "agent.key"))
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // dies with the test
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.pid = p.cmd.Process.Pid
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := p.legit.WhoAmI(ctx)
		cancel()
		if err == nil {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("agent never answered on %s: %v\n%s", p.addr, err, p.log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop ends the agent as an operator would (SIGTERM) and waits for it.
func (p *agentProc) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("agent ended with %v\n%s", err, p.log)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("agent still running 30 s after SIGTERM\n%s", p.log)
	}
}

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

// procStat is what /proc shows of the agent.
type procStat struct {
	rssKB, hwmKB int // resident memory now and at its peak (VmHWM)
	threads, fds int
	children     []int // processes whose parent is the agent
}

// readProc reads the agent's /proc entries.
func readProc(pid int) (procStat, error) {
	var s procStat
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		n, _ := strconv.Atoi(f[1])
		switch f[0] {
		case "VmRSS:":
			s.rssKB = n
		case "VmHWM:":
			s.hwmKB = n
		case "Threads:":
			s.threads = n
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return s, err
	}
	s.fds = len(fds)
	s.children, err = childrenOf(pid)
	return s, err
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", n))
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		rest := stat[bytes.LastIndexByte(stat, ')')+1:]
		if f := strings.Fields(string(rest)); len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, n)
		}
	}
	return out, nil
}

// sampler reads the agent's /proc entries every interval and keeps the peaks.
type sampler struct {
	mu                    sync.Mutex
	peakFDs, peakThreads  int
	peakChildren, samples int
}

func (s *sampler) run(ctx context.Context, pid int) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if st, err := readProc(pid); err == nil {
			s.mu.Lock()
			s.peakFDs = max(s.peakFDs, st.fds)
			s.peakThreads = max(s.peakThreads, st.threads)
			s.peakChildren = max(s.peakChildren, len(st.children))
			s.samples++
			s.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// tally counts a legitimate client's requests and times them.
type tally struct {
	mu     sync.Mutex
	ok     int
	failed []string
	lat    []time.Duration
}

func (l *tally) add(d time.Duration, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lat = append(l.lat, d)
	if err != nil {
		l.failed = append(l.failed, err.Error())
		return
	}
	l.ok++
}

// summary is the success rate and latency percentiles.
func (l *tally) summary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.lat)
	if n == 0 {
		return "no requests"
	}
	lat := slices.Clone(l.lat)
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[min(n-1, int(p*float64(n)))].Round(time.Millisecond) }
	return fmt.Sprintf("%d/%d ok (%.1f%%), latency p50 %v p90 %v p99 %v max %v",
		l.ok, n, 100*float64(l.ok)/float64(n), pct(0.5), pct(0.9), pct(0.99), lat[n-1].Round(time.Millisecond))
}

// legitWhoAmI asks the agent for the source address every 100 ms until ctx ends; each request
// has its own 30 s bound (the project client's), never cut short by the end of the phase.
func legitWhoAmI(ctx context.Context, p *agentProc, l *tally) {
	for ctx.Err() == nil {
		start := time.Now()
		rctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		ip, err := p.legit.WhoAmI(rctx)
		cancel()
		if err == nil && ip != "127.0.0.1" {
			err = fmt.Errorf("whoami answered %q, want 127.0.0.1", ip)
		}
		l.add(time.Since(start), err)
		pause(ctx, 100*time.Millisecond)
	}
}

// legitServers starts a real server through the agent (cnibench's echo server), connects to
// it, and stops it, every 500 ms until ctx ends.
func legitServers(ctx context.Context, p *agentProc, l *tally) {
	for ctx.Err() == nil {
		start := time.Now()
		err := startConnectStop(p)
		l.add(time.Since(start), err)
		pause(ctx, 500*time.Millisecond)
	}
}

// startConnectStop is one cycle of legitServers.
func startConnectStop(p *agentProc) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	got, err := p.legit.StartServers(ctx, []external.Server{{Workload: "tcp-rr/64B", Port: 0}})
	if err != nil {
		return err
	}
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(got[0].Port)), 10*time.Second)
	if err != nil {
		return fmt.Errorf("server the agent started on port %d: %w", got[0].Port, err)
	}
	c.Close()
	return p.legit.StopServers(ctx)
}

// pause waits d or until ctx ends.
func pause(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
