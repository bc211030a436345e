package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/agentcmd"
	"github.com/cnibench/cnibench/internal/catalog"
	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/record"
	"k8s.io/apimachinery/pkg/util/wait"
)

// SetupPath is the path of the samples that time how a target was set up (record.SetupPath).
const SetupPath = record.SetupPath

// Workloads of the setup samples.
const (
	// setupPods xN is the pods created at once to bring the run to N pairs (x1: the first
	// pair's, on a quiet cluster).
	setupPods    = "pod-startup"
	setupService = "service-programming"
	setupNetwork = "network-readiness"
	setupPolicy  = "netpol-enforcement"
	setupMemory  = "pod-memory"
)

// probeInterval is the time between connection attempts that time a Service or a policy
// taking effect: the resolution of those latencies.
const probeInterval = 10 * time.Millisecond

// probeTimeout bounds each probe's handshake.
const probeTimeout = 250 * time.Millisecond

// addSetup records one setup figure set of the target, stored once the target is.
func (tg *target) addSetup(workload string, pairs int, m map[string]float64) {
	tg.setup = append(tg.setup, record.Sample{Target: tg.name, Path: SetupPath, Workload: workload, Pairs: pairs,
		Started: time.Now().UTC(), Metrics: m})
}

// setupLatencies records the pods' startup latencies and measures how long the datapath takes
// to carry traffic through a new Service and to a new pod. A setup figure that cannot be
// measured is reported and left out: it must not cost the run its samples. quiet is called
// before the first timed figure, once nothing but the run's pods may be busy (it waits for
// the node probe, which runs beside the wait for the pods' memory).
func (r *run) setupLatencies(ctx context.Context, tg *target, quiet func()) {
	// With pods per round, every round times startup and memory at each level instead.
	if !r.opts.Suite.PerRound() {
		for _, st := range tg.fixture.Startup {
			tg.addSetup(setupPods, st.Pairs, podMetrics(st.Pods))
		}
		r.podMemory(ctx, tg)
	}
	quiet()
	role, ok := r.timeService(ctx, tg)
	if !ok {
		return // no pod-network path: no Service to time
	}
	if ms, err := r.networkReadiness(ctx, tg, role); err != nil {
		r.progress("target %s: warning: network readiness not measured: %v", tg.name, err)
	} else {
		r.progress("target %s: a new pod's first connection succeeded %.0f ms after its container started probing", tg.name, ms)
		tg.addSetup(setupNetwork, 1, map[string]float64{catalog.NetReady: ms})
	}
}

// networkReadiness starts a pod whose only container probes the first pair's server from the
// moment it runs, and returns the time from its first attempt to its first successful one, in
// ms, both on the node's clock: how long a new pod waits for its network to carry traffic.
func (r *run) networkReadiness(ctx context.Context, tg *target, role string) (float64, error) {
	srv := tg.fixture.PodIP(role, 0)
	port := tg.fixture.Spec.ServersOf(role, 0)[0].Port
	confirm := 0 // the first success is the figure: its network carries traffic
	argv := agentcmd.ProbeCmd{Target: net.JoinHostPort(srv, strconv.Itoa(port)), Until: agentcmd.ProbeOpen,
		Interval: probeInterval, Timeout: probeTimeout, Confirm: &confirm, MaxWait: time.Minute}.Argv()
	out, err := tg.client.RunOnce(ctx, tg.fixture, kube.ReadinessPodName, argv, 3*time.Minute)
	if err != nil {
		return 0, err
	}
	var res agentcmd.WatchResult
	if err := json.Unmarshal([]byte(lastLine(out)), &res); err != nil || res.StartNS == 0 {
		return 0, fmt.Errorf("pod %s printed %q: %v", kube.ReadinessPodName, out, err)
	}
	return latencyMS(time.Unix(0, res.StartNS), time.Unix(0, res.FirstNS)), nil
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func podMetrics(l kube.PodLatencies) map[string]float64 {
	m := map[string]float64{catalog.PodCount: float64(l.Ready.N)}
	for name, v := range map[string]float64{catalog.PodRunningP50: l.Running.P50, catalog.PodRunningP90: l.Running.P90,
		catalog.PodRunningP99: l.Running.P99, catalog.PodReadyP50: l.Ready.P50, catalog.PodReadyP90: l.Ready.P90, catalog.PodReadyP99: l.Ready.P99} {
		if v == v { // NaN when no pod got there
			m[name] = v
		}
	}
	return m
}

// timeService measures how long a new Service takes to carry traffic to the target's server
// pod and records it as a setup figure; it returns the server's role, and false when the
// target has no pod-network path (no client or server pod).
func (r *run) timeService(ctx context.Context, tg *target) (string, bool) {
	role := kube.RoleServerB
	if !tg.fixture.Has(role) {
		role = kube.RoleServerA
	}
	if !tg.fixture.Has(kube.RoleClient) || !tg.fixture.Has(role) {
		return role, false
	}
	if ms, err := r.serviceLatency(ctx, tg, role); err != nil {
		r.progress("target %s: warning: service programming latency not measured: %v", tg.name, err)
	} else {
		r.progress("target %s: a new Service carried traffic %.0f ms after its endpoint was ready", tg.name, ms)
		tg.addSetup(setupService, 1, map[string]float64{catalog.ServiceReady: ms})
	}
	return role, true
}

// serviceLatency creates a Service whose endpoint does not exist yet, starts probing its
// ClusterIP from the first client, adds the endpoint, and returns the time from the endpoint
// being ready to the first connection through the ClusterIP, in ms.
func (r *run) serviceLatency(ctx context.Context, tg *target, role string) (float64, error) {
	port := tg.fixture.Spec.ServersOf(role, 0)[0].Port
	svc, err := tg.client.CreateProbeService(ctx, tg.fixture, role, port)
	if err != nil {
		return 0, err
	}
	defer func() {
		if err := tg.client.DeleteProbeService(ctx, tg.fixture); err != nil {
			r.progress("target %s: warning: %v", tg.name, err)
		}
	}()
	var ready time.Time
	first, err := r.probeUntil(ctx, tg, svc.Spec.ClusterIP, port, agentcmd.ProbeOpen, func() (err error) {
		ready, err = tg.client.AddProbeEndpoint(ctx, tg.fixture, role)
		return err
	})
	if err != nil {
		return 0, err
	}
	return latencyMS(ready, first), nil
}

// latencyMS is the time from a change to the first probe that saw it, in ms. A probe started
// within one interval before the runner saw the change is at most one interval early: the
// change happened between them, so the latency is taken as zero then.
func latencyMS(change, seen time.Time) float64 {
	return max(float64(seen.Sub(change))/float64(time.Millisecond), 0)
}

// probeUntil probes ip:port from the first client every probeInterval until the outcome is
// seen, after running change; it returns when the first attempt with that outcome started.
func (r *run) probeUntil(ctx context.Context, tg *target, ip string, port int, until string, change func() error) (time.Time, error) {
	client := tg.fixture.Pod(kube.RoleClient, 0).Name
	confirm := 3
	argv := agentcmd.RunCmd{Barrier: true, Command: agentcmd.ProbeCmd{Target: net.JoinHostPort(ip, strconv.Itoa(port)), Until: until,
		Interval: probeInterval, Timeout: probeTimeout, Confirm: &confirm, MaxWait: enforceTimeout}.Argv()}.Argv()
	reports, err := r.runPairs(ctx, tg, [][]string{argv}, []pairEnd{{clientPod: client}}, enforceTimeout+time.Minute, releaseHooks{after: change})
	if err != nil {
		return time.Time{}, err
	}
	rep := reports[0]
	var res agentcmd.WatchResult
	if err := json.Unmarshal([]byte(rep.Stdout), &res); err != nil || rep.ExitCode != 0 {
		return time.Time{}, fmt.Errorf("probe %s:%d until %s: exit %d: %s%s", ip, port, until, rep.ExitCode, rep.Stdout, rep.Stderr)
	}
	return time.Unix(0, res.FirstNS), nil
}

// podStatsWait bounds the wait for the kubelets' first stats of the run's pods.
const podStatsWait = time.Minute

// podMemory records the mean memory working set of the run's pods, idle after startup, from
// their nodes' kubelets: what each pod costs the node, its runtime's sandbox included.
func (r *run) podMemory(ctx context.Context, tg *target) {
	nodes, ours := map[string]bool{}, map[string]bool{}
	for _, pods := range tg.fixture.Pods {
		for _, p := range pods {
			nodes[p.Spec.NodeName], ours[p.Name] = true, true
		}
	}
	names := make([]string, 0, len(nodes))
	for n := range nodes {
		names = append(names, n)
	}
	// A kubelet reports a new pod's memory only once its stats housekeeping (every 10-15 s)
	// has seen it, as 0 before: wait until every pod has a figure.
	var sum, n float64
	err := wait.PollUntilContextTimeout(ctx, time.Second, podStatsWait, true, func(ctx context.Context) (bool, error) {
		mem, err := tg.client.PodMemory(ctx, tg.namespace, names)
		if err != nil {
			return false, err
		}
		sum, n = 0, 0
		for name, b := range mem {
			if ours[name] && b > 0 {
				sum, n = sum+b, n+1
			}
		}
		return int(n) == len(ours), nil
	})
	if err != nil && n > 0 {
		err = fmt.Errorf("the kubelets report %.0f of the run's %d pods: %w", n, len(ours), err)
	}
	if err != nil {
		r.progress("target %s: warning: pod memory not measured: %v", tg.name, err)
		return
	}
	mib := sum / n / (1 << 20)
	r.progress("target %s: %.0f pods use %.1f MiB each (working set, from the kubelets)", tg.name, n, mib)
	tg.addSetup(setupMemory, tg.fixture.Up(), map[string]float64{catalog.PodWorkingSet: mib, catalog.PodCount: n})
}
