package runner

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cnibench/cnibench/internal/agentcmd"
	"github.com/cnibench/cnibench/internal/catalog"
	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/monitor"
	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/setting"
	"github.com/cnibench/cnibench/internal/suite"
)

// endpoints lists the first n pairs of a path for a workload's server (its index among the
// run's server containers): its client's pod and the address its server listens on, as the
// path table says.
func (t *target) endpoints(path string, server, n int) ([]pairEnd, error) {
	p, ok := suite.PathOf(path)
	if !ok {
		return nil, fmt.Errorf("unknown path %q", path)
	}
	f := t.fixture
	out := make([]pairEnd, 0, n)
	for i := range n {
		pod := func(role string) string { return f.Pod(role, i).Name }
		client := podContainer{pod: pod(p.Client), container: kube.ClientContainer}
		e := pairEnd{clientPod: client.pod, statPods: []podContainer{client}}
		switch p.Address {
		case suite.AddrNone:
			// No server and no path: the workload runs in the client container alone.
		case suite.AddrPod, suite.AddrService, suite.AddrLoopback, suite.AddrSecondary:
			srv := f.Spec.ServersOf(p.Server, i)[server]
			e.target, e.port = serverAddress(f, p, i), srv.Port
			if e.target == "" && p.Address == suite.AddrSecondary {
				return nil, fmt.Errorf("path %s: pod %s has no address on network %s", path, pod(p.Server), f.Spec.Secondary)
			}
			e.statPods = append(e.statPods, podContainer{pod: pod(p.Server), container: srv.Name})
		case suite.AddrGateway:
			var err error
			if e, err = t.gatewayEnd(); err != nil {
				return nil, err
			}
		case suite.AddrExternal, suite.AddrExternalViaGateway:
			if t.ext == nil {
				return nil, fmt.Errorf("path %s: the target has no external host", path)
			}
			// The external host is shared by the pairs: each has its own ports.
			ports := t.ext.ports[server]
			if i >= len(ports) {
				return nil, fmt.Errorf("path %s: no server of pair %d on the external host", path, i)
			}
			e.target, e.port = t.ext.target(p), ports[i]
		}
		out = append(out, e)
	}
	return out, nil
}

// serverAddress is the address pair i's client reaches a fixture's server at on a path.
func serverAddress(f *kube.Fixture, p suite.Path, i int) string {
	switch p.Address {
	case suite.AddrService:
		return f.ServiceIPs[i]
	case suite.AddrLoopback:
		return loopback(f.Family())
	case suite.AddrSecondary:
		return f.SecondaryIP(p.Server, i)
	}
	return f.PodIP(p.Server, i)
}

// checkEnginesCarry refuses a workload whose engine cannot carry the target's traffic: a
// cluster found IPv6-only that the suite did not say was (a remote one, or a local one named
// by --cluster), measured with sockperf.
func checkEnginesCarry(s suite.Suite, family string) error {
	if family != lab.IPv6 {
		return nil
	}
	for i, w := range s.Workloads {
		ew := w.Engine(s.Duration.Duration)
		if e, err := engine.For(ew); err == nil && !engine.CarriesIPv6(e) {
			return fmt.Errorf("workloads[%d] (%s): the target's pods are IPv6 and %s takes IPv4 only: %w", i, ew.ID(), e.Name(), &setting.Error{Name: "families",
				Want: fmt.Sprintf("expected ipv6 among them (families: [ipv6] in the suite), which measures it with the %s agent, or set the workload's tool: %s", engine.NameCnibench, engine.NameCnibench)})
		}
	}
	return nil
}

// loopback is the loopback address of a family: ::1 for IPv6, else 127.0.0.1.
func loopback(family string) string {
	if family == lab.IPv6 {
		return "::1"
	}
	return "127.0.0.1"
}

// measure runs one step and returns its sample; a failed tool gives a sample with Error set,
// and the error itself, whose kind says what failed (an API server away, a tool's exit).
func (r *run) measure(ctx context.Context, tg *target, st Step) (record.Sample, error) {
	ew := st.Combo.Workload.Engine(st.Duration)
	n := max(st.Combo.Pairs, 1)
	s := r.newSample(tg, st)
	fail := func(err error) (record.Sample, error) {
		s.Error, s.Duration = err.Error(), time.Since(s.Started)
		return s, err
	}
	eng, err := engine.For(ew)
	if err != nil {
		return fail(err)
	}
	ends, err := tg.endpoints(st.Combo.Path, tg.servers[ew.ID()], n)
	if err != nil {
		return fail(err)
	}
	if suite.IsEgress(st.Combo.Path) {
		if err := r.proveSource(ctx, tg, st.Combo.Path, ends); err != nil {
			return fail(err)
		}
	}
	var statPods []podContainer
	argvs := make([][]string, n)
	for i, e := range ends {
		statPods = append(statPods, e.statPods...)
		argvs[i] = clientArgv(eng, ew, e, n, r.opts.Suite.AwakeRR())
	}
	if ew.Search {
		// Trials at changing rates: the costs of the whole search would describe no one
		// rate, so a search sample has none.
		fig, err := r.searchRate(ctx, tg, eng, ew, ends)
		s.Raw = fig.raw
		if err != nil {
			return fail(err)
		}
		s.Metrics, s.Duration = fig.metrics, time.Since(s.Started)
		return s, nil
	}
	before, err := r.stats(ctx, tg, statPods)
	if err != nil {
		return fail(err)
	}
	var prof profiling
	var hooks releaseHooks
	if tg.profiler != nil && !st.Warmup() {
		// perf sets up while the clients start; its window opens right before their release.
		prof.start(ctx, tg.profiler)
		hooks.before = func() error {
			prof.enable()
			return nil
		}
	}
	reports, err := r.runPairs(ctx, tg, argvs, ends, st.Duration+45*time.Second+time.Duration(n)*200*time.Millisecond, hooks)
	// Also when the sample failed: the recording must end and its file go.
	s.Profile = prof.folded(ctx)
	if err != nil {
		return fail(err)
	}
	after, err := r.stats(ctx, tg, statPods)
	if err != nil {
		return fail(err)
	}
	fig, err := combine(eng, ew, reports)
	s.Raw = fig.raw
	if err != nil {
		return fail(err)
	}
	s.Metrics = fig.metrics
	costs(&s, st, ends, before, after, reports, fig)
	s.Duration = time.Since(s.Started)
	return s, nil
}

// costs adds a measured sample's cost figures and flags: the CPU and memory its counters and
// its clients' windows show, per packet where its clients' interfaces count the pairs' own
// traffic, the gateway's own on the gateway path, and a skewed start of its pairs.
func costs(s *record.Sample, st Step, ends []pairEnd, before, after []monitor.NodeStat, reports []agentcmd.RunReport, fig pairFigures) {
	n := max(st.Combo.Pairs, 1)
	windows := make([]*agentcmd.Window, len(reports))
	for i, rep := range reports {
		windows[i] = rep.Window
	}
	s.Resources = resources(before, after, windows, fig.metrics, st.Duration)
	path, _ := suite.PathOf(st.Combo.Path)
	// On localhost the traffic never leaves the pod: its interface counts none of it. On
	// host-network the clients of several pairs share their node's interfaces, and each
	// would count the others' packets.
	if path.Address != suite.AddrLoopback && (!path.HostNetwork || n == 1) {
		perPacket(s.Resources, windows)
	}
	if path.Address == suite.AddrGateway {
		gatewayResources(s.Resources, ends[0], before, after, st.Duration)
	}
	if n > 1 && fig.skew > time.Duration(skewFlagFraction*float64(st.Duration)) {
		s.Flags = append(s.Flags, record.FlagSkew)
	}
}

// newSample is a step's sample before it is measured, started now.
func (r *run) newSample(tg *target, st Step) record.Sample {
	ew := st.Combo.Workload.Engine(st.Duration)
	return record.Sample{RunID: r.id, Seq: st.Seq, Round: st.Round, Warmup: st.Warmup(),
		Target: tg.name, Path: st.Combo.Path, Workload: ew.ID(), Pairs: max(st.Combo.Pairs, 1), Started: time.Now().UTC()}
}

// statReaders bounds concurrent counter reads: a hundred pairs read two hundred containers.
const statReaders = 16

// stats reads the counters of every pod of an endpoint concurrently, so that both ends are
// read at nearly the same instant.
func (r *run) stats(ctx context.Context, tg *target, pods []podContainer) ([]monitor.NodeStat, error) {
	out := make([]monitor.NodeStat, len(pods))
	errs := make([]error, len(pods))
	var wg sync.WaitGroup
	sem := make(chan struct{}, statReaders)
	for i, pc := range pods {
		wg.Add(1)
		go func(i int, pc podContainer) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = readStat(ctx, tg.client, tg.namespace, pc, &out[i])
		}(i, pc)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// statAttempts bounds the reads of one container's counters. An exec whose connection drops
// ends with no output and no error (the client takes the empty error stream for success),
// which a busy node does now and then; reading counters has no side effect, so it is retried.
const statAttempts = 3

// statTimeout bounds one read of a container's counters, which takes milliseconds.
const statTimeout = 30 * time.Second

// readStat reads one container's counters.
func readStat(ctx context.Context, c *kube.Client, namespace string, pc podContainer, out *monitor.NodeStat) error {
	var err error
	for attempt := 0; attempt < statAttempts; attempt++ {
		tctx, cancel := context.WithTimeout(ctx, statTimeout)
		var raw []byte
		raw, err = c.Exec(tctx, cmp.Or(pc.namespace, namespace), pc.pod, pc.container, agentcmd.StatCmd{}.Argv())
		cancel()
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			// Reading counters takes milliseconds: an exec that outlived its deadline lost its
			// connection without being told (a stream on a dead connection ends at its caller's
			// deadline, or with no output and no error).
			c.NoteLostConnection(fmt.Sprintf("an exec in %s/%s had not ended %s after it began", pc.pod, pc.container, statTimeout))
		}
		if err != nil {
			return err
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			c.NoteLostConnection(fmt.Sprintf("an exec in %s/%s ended without output or exit status", pc.pod, pc.container))
			err = fmt.Errorf("read counters of %s/%s: the exec ended without output or exit status (%d attempts)", pc.pod, pc.container, statAttempts)
			continue
		}
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("read counters of %s/%s: %w", pc.pod, pc.container, err)
		}
		return nil
	}
	return err
}

// hostReadings picks each host's pair of readings: its clients' measured window where it has
// one (from the first client's start to the last one's end), the exec readings around the
// sample otherwise; and, by host, the CPU time the keep-awake spinners used in that window,
// which is not the sample's.
func hostReadings(before, after []monitor.NodeStat, windows []*agentcmd.Window) (first, last map[string]monitor.NodeStat, awake map[string]float64) {
	first, last, awake = map[string]monitor.NodeStat{}, map[string]monitor.NodeStat{}, map[string]float64{}
	for i := range before {
		if _, seen := first[before[i].BootID]; !seen {
			first[before[i].BootID], last[before[i].BootID] = before[i], after[i]
		}
	}
	windowed := map[string]bool{}
	for _, w := range windows {
		if w == nil {
			continue
		}
		id := w.Before.BootID
		awake[id] += w.AwakeSeconds
		if !windowed[id] || w.Before.Time.Before(first[id].Time) {
			first[id] = w.Before
		}
		if !windowed[id] || w.After.Time.After(last[id].Time) {
			last[id] = w.After
		}
		windowed[id] = true
	}
	return first, last, awake
}

// resources turns counters into the sample's cost figures. Host CPU is counted once per host
// (pods on one machine share its /proc/stat, as every node of the local cluster does), over
// the measured window where a client read it (its agent reads the counters right around the
// tool), and over the exec readings around the sample elsewhere (a server's node of a remote
// cluster). Pod CPU is the client's and server's own cgroups. No IRQ time accounting here:
// softirq work lands on whatever task it interrupted, so host busy time is the honest total.
func resources(before, after []monitor.NodeStat, windows []*agentcmd.Window, m engine.Metrics, d time.Duration) map[string]float64 {
	res := map[string]float64{}
	var podCPU, podMem, containers float64
	for i := range before {
		if u, err := monitor.Delta(before[i], after[i]); err == nil && u.CgroupCPUSeconds >= 0 {
			podCPU += u.CgroupCPUSeconds
		}
		if m := after[i].CgroupMemoryBytes; m >= 0 {
			podMem += float64(m)
			containers++
		}
	}
	hostBefore, hostAfter, awake := hostReadings(before, after, windows)
	for _, secs := range awake {
		podCPU -= secs // the spinners ran in the clients' containers
	}
	var hostCPU, busyPct, stealPct, hosts, memUsed float64
	for id, b := range hostBefore {
		u, err := monitor.Delta(b, hostAfter[id])
		if err != nil {
			continue
		}
		u = u.Without(awake[id])
		hostCPU += u.CPUSeconds
		busyPct += u.CPUBusyPct
		stealPct += u.StealPct
		memUsed += float64(u.MemUsedBytes)
		hosts++
	}
	if hosts == 0 {
		return res
	}
	res["host_cpu_seconds"] = hostCPU
	res["node_cpu_pct"] = busyPct / hosts
	res[catalog.NodeSteal] = stealPct / hosts
	res["pod_cpu_seconds"] = max(podCPU, 0)
	res["host_mem_used_mib"] = memUsed / hosts / (1 << 20)
	if containers > 0 {
		res[catalog.PodMemory] = podMem / containers / (1 << 20)
	}
	secs := d.Seconds()
	if gbps, ok := m["throughput_gbps"]; ok && gbps > 0 {
		gigabytes := gbps * secs / 8
		res["cpu_s_per_gb"] = hostCPU / gigabytes
		res["pod_cpu_s_per_gb"] = max(podCPU, 0) / gigabytes
	}
	for _, key := range []string{"transactions_per_s", "connections_per_s"} {
		if rate, ok := m[key]; ok && rate > 0 {
			res["cpu_s_per_1k_tx"] = hostCPU / (rate * secs / 1000)
			res["pod_cpu_s_per_1k_tx"] = max(podCPU, 0) / (rate * secs / 1000)
		}
	}
	return res
}

// perPacket adds the host CPU per packet through the clients' interfaces, counted by each
// client's agent over its measured window, where every client's window knows its packets and
// there were some. Each packet of a pair crosses its client's interface once, sent or
// received, so the clients' count is the pairs' traffic.
func perPacket(res map[string]float64, windows []*agentcmd.Window) {
	hostCPU, ok := res[catalog.HostCPUSeconds]
	if !ok {
		return
	}
	var packets int64
	for _, w := range windows {
		if w == nil {
			return
		}
		u, err := monitor.Delta(w.Before, w.After)
		if err != nil || u.Packets < 0 {
			return
		}
		packets += u.Packets
	}
	if packets > 0 {
		res[catalog.CPUPerPacket] = hostCPU * 1e6 / float64(packets)
	}
}
