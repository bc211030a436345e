package agentabuse

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/external"
)

// The bounds the agent must stay within, generous enough for a loaded machine: its memory
// while abused and once the abuse ended, and what it keeps open afterwards.
const (
	peakRSSBoundKB  = 200 << 10
	afterRSSSlackKB = 32 << 10
	afterFDSlack    = 8
	burstSize       = 1000
	slowPerKind     = 100
)

// abuseDuration is how long the abuse lasts: CNB_AGENT_ABUSE_DURATION (a Go duration) for a
// longer run, 15 s by default.
func abuseDuration(t *testing.T) time.Duration {
	v := os.Getenv("CNB_AGENT_ABUSE_DURATION")
	if v == "" {
		return 15 * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("CNB_AGENT_ABUSE_DURATION: expected a duration such as 5m, got %q", v)
	}
	return d
}

// TestAgentUnderAbuse abuses a real agent in every way at once while two clients with the
// token keep making real requests: every abuse is answered as it must be, every legitimate
// request succeeds, the agent's memory stays bounded and returns near where it started, its
// descriptors do, and nothing it started outlives it.
func TestAgentUnderAbuse(t *testing.T) {
	d := abuseDuration(t)
	p := startAgent(t, buildCnibench(t))
	for range 3 { // what a run does, so that the baseline is the agent at work
		if err := startConnectStop(p); err != nil {
			t.Fatalf("before the abuse: %v", err)
		}
	}
	base, err := readProc(p.pid)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("baseline: RSS %d MB, %d fds, %d threads, %d children", base.rssKB>>10, base.fds, base.threads, len(base.children))

	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	sctx, stopSampling := context.WithCancel(context.Background())
	s := &sampler{}
	go s.run(sctx, p.pid)
	who, srv := &tally{}, &tally{}
	results := abuse(ctx, p, who, srv)
	stopSampling()
	peak, err := readProc(p.pid)
	if err != nil {
		t.Fatalf("agent gone after the abuse: %v\n%s", err, p.log)
	}
	after := settle(t, p, base)

	for _, r := range results {
		t.Log(r)
		if r.expected() != r.n || r.n == 0 {
			t.Errorf("%s: %d of %d attempts not answered as required", r.name, r.n-r.expected(), r.n)
		}
	}
	t.Logf("legitimate whoami: %s", who.summary())
	t.Logf("legitimate start, connect, stop: %s", srv.summary())
	for name, l := range map[string]*tally{"whoami": who, "servers": srv} {
		if len(l.failed) > 0 || l.ok == 0 {
			t.Errorf("legitimate %s requests failed: %d of %d, first: %v", name, len(l.failed), len(l.lat), l.failed[:min(3, len(l.failed))])
		}
	}
	t.Logf("agent: RSS %d MB before, peak %d MB, %d MB after; fds %d before, peak %d, %d after; threads %d before, peak %d, %d after; children peak %d, %d after",
		base.rssKB>>10, peak.hwmKB>>10, after.rssKB>>10, base.fds, s.peakFDs, after.fds, base.threads, s.peakThreads, after.threads, s.peakChildren, len(after.children))
	if peak.hwmKB > peakRSSBoundKB {
		t.Errorf("peak RSS %d MB, want under %d MB", peak.hwmKB>>10, peakRSSBoundKB>>10)
	}
	if after.rssKB > peakRSSBoundKB {
		t.Errorf("RSS after the abuse %d MB, want under %d MB", after.rssKB>>10, peakRSSBoundKB>>10)
	}
	if os.Getenv("CNB_AGENT_ABUSE_DURATION") != "" {
		rssReturns(t, p, base)
	}
	checkNothingOutlives(t, p)
}

// rssReturns expects the agent's RSS back near the baseline within gcPeriod: the Go runtime
// returns freed memory to the system, at a bounded pace, after a garbage collection, which an
// idle program runs every 2 minutes, so only the long run waits for it.
func rssReturns(t *testing.T, p *agentProc, base procStat) {
	t.Helper()
	const gcPeriod = 4 * time.Minute
	t0 := time.Now()
	for {
		st, err := readProc(p.pid)
		if err != nil {
			t.Fatal(err)
		}
		if st.rssKB <= base.rssKB+afterRSSSlackKB {
			t.Logf("RSS back to %d MB %v after the abuse ended", st.rssKB>>10, time.Since(t0).Round(time.Second))
			return
		}
		if time.Since(t0) > gcPeriod {
			t.Errorf("RSS %d MB %v after the abuse, want within %d MB of the %d MB before", st.rssKB>>10, gcPeriod, afterRSSSlackKB>>10, base.rssKB>>10)
			return
		}
		time.Sleep(time.Second)
	}
}

// abuse runs every abuser and the two legitimate clients until ctx ends and the slow
// clients' last connections closed.
func abuse(ctx context.Context, p *agentProc, who, srv *tally) []*result {
	results := []*result{{name: "bad tokens"}, {name: "malformed bodies"}, {name: "100 MB bodies"},
		{name: "TLS garbage"}, {name: fmt.Sprintf("%d connections at once", burstSize)}}
	abusers := []func(context.Context, *agentProc, *result){badTokens, malformed, oversized, tlsGarbage,
		func(ctx context.Context, p *agentProc, r *result) { burst(ctx, p, burstSize, r) }}
	var wg sync.WaitGroup
	for i, f := range abusers {
		wg.Go(func() { f(ctx, p, results[i]) })
	}
	for _, k := range slowKinds(p) {
		r := &result{name: "slow: " + k.name}
		results = append(results, r)
		wg.Go(func() { slowClients(ctx, p, k, slowPerKind, r) })
	}
	wg.Go(func() { legitWhoAmI(ctx, p, who) })
	wg.Go(func() { legitServers(ctx, p, srv) })
	wg.Wait()
	return results
}

// settle waits until the agent's descriptors are back near the baseline (the abusers' last
// connections closed) and it runs no server, and returns what /proc then shows.
func settle(t *testing.T, p *agentProc, base procStat) procStat {
	t.Helper()
	deadline := time.Now().Add(idleBound)
	for {
		st, err := readProc(p.pid)
		if err != nil {
			t.Fatal(err)
		}
		if st.fds <= base.fds+afterFDSlack && len(st.children) == 0 {
			return st
		}
		if time.Now().After(deadline) {
			t.Errorf("after the abuse: %d fds (%d before), children %v", st.fds, base.fds, st.children)
			return st
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkNothingOutlives starts a server through the agent, stops the agent as an operator
// would, and expects the server gone with it.
func checkNothingOutlives(t *testing.T, p *agentProc) {
	t.Helper()
	got, err := p.legit.StartServers(context.Background(), []external.Server{{Workload: "tcp-rr/64B", Port: 0}})
	if err != nil {
		t.Fatalf("start a server after the abuse: %v", err)
	}
	children, err := childrenOf(p.pid)
	if err != nil || len(children) != 1 {
		t.Fatalf("children of the agent running one server: %v, %v", children, err)
	}
	p.stop(t)
	if _, err := os.Stat("/proc/" + strconv.Itoa(children[0])); err == nil {
		t.Errorf("server %d outlived the agent", children[0])
	}
	if c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(got[0].Port)), time.Second); err == nil {
		c.Close()
		t.Errorf("port %d still listening after the agent ended", got[0].Port)
	}
}
