package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/setting"
	"github.com/cnibench/cnibench/internal/suite"
	"github.com/cnibench/cnibench/internal/tuning"
)

// serverPortBase is the first port servers listen on; high, to stay clear of node daemons on
// the host-network path.
const serverPortBase = 25201

// target is one prepared cluster of the run.
type target struct {
	name         string
	client       *kube.Client
	fixture      *kube.Fixture
	servers      map[string]int // index of each workload's server container, by workload id
	namespace    string
	ownNamespace bool
	provider     Provider
	fingerprint  map[string]string
	setup        []record.Sample // setup latencies, stored once the target is
	nodes        []string        // where its pods run
	lost         Loss            // what of its cluster went down during the run
	ext          *externalHost   // the server outside the cluster, for the egress paths
	gateway      *splitGateway   // the Gateway API split, for the gateway path
	secondary    string          // the network attachment of the secondary path; "": none
	profiler     cpuProfiler     // nil: the run records no CPU profiles of this target
	profile      tuning.Profile  // its tuning, which a pod made again mid-run gets too
}

// servers derives one server container per distinct server command among the workloads
// (the index of each workload's), and one set of them per pair, up to the suite's largest
// concurrency: pair i's listen on ports of their own, which host-network pairs need.
func servers(s suite.Suite, portBase int) (map[string]int, [][]kube.Server, error) {
	byWorkload := map[string]int{}
	byCommand := map[string]int{}
	type tmpl struct {
		name   string
		argv   func(port int) []string
		closes bool // closes its connections first
		data   func(port int) int
	}
	var list []tmpl
	for _, w := range s.Workloads {
		ew := w.Engine(s.Duration.Duration)
		eng, err := engine.For(ew)
		if err != nil {
			return nil, nil, err
		}
		if eng.ServerArgv(ew, 0) == nil {
			continue // runs in the client pod alone
		}
		key := eng.Name() + " " + strings.Join(eng.ServerArgv(ew, 0), " ")
		j, ok := byCommand[key]
		if !ok {
			j = len(list)
			byCommand[key] = j
			c, ok := eng.(serverCloser)
			t := tmpl{name: fmt.Sprintf("srv%d-%s", j, eng.Name()), argv: func(port int) []string { return eng.ServerArgv(ew, port) },
				closes: ok && c.ServerClosesFirst(ew)}
			if d, ok := eng.(engine.DataPorter); ok {
				t.data = d.DataPort
			}
			list = append(list, t)
		}
		byWorkload[ew.ID()] = j
	}
	// A server with a data port takes two: its own and the next.
	width := 0
	for _, t := range list {
		width += 1 + btoi(t.data != nil)
	}
	if n := s.MostPairs() * width; n > closerPorts {
		return nil, nil, fmt.Errorf("%d pairs of %d servers need %d ports, more than the %d a variant has: fewer pairs or workloads",
			s.MostPairs(), len(list), n, closerPorts)
	}
	sets := make([][]kube.Server, s.MostPairs())
	for i := range sets {
		port := portBase + i*width
		for _, t := range list {
			srv := kube.Server{Name: t.name, Port: port}
			if t.closes {
				srv.Port += closerPorts
			}
			srv.Argv = t.argv(srv.Port)
			port++
			if t.data != nil {
				srv.DataPort = t.data(srv.Port)
				port++
			}
			sets[i] = append(sets[i], srv)
		}
	}
	return byWorkload, sets, nil
}

// btoi is 1 for true.
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// serverCloser is an engine whose server may close its connections first (tcp-crr's echo
// server): the TIME_WAIT state then holds its port for a minute after the run, which only a
// server that rebinds with SO_REUSEADDR, as Go's listeners do, can take again.
type serverCloser interface {
	ServerClosesFirst(w engine.Workload) bool
}

// closerPorts moves the ports of servers that close first to a block of their own within a
// variant's range, so that the next run never hands one of them to another tool (sockperf
// does not set SO_REUSEADDR and fails to bind a port with TIME_WAIT sockets left on it).
const closerPorts = portsPerVariant / 2

// roles lists the pods the suite's paths need; workloads inside one pod run in the client, and
// a suite of those alone needs no path's pods (a server pod without servers is no pod).
func roles(paths []string, workloads []suite.Workload) []string {
	need := map[string]bool{}
	inPodOnly := len(workloads) > 0
	for _, w := range workloads {
		need[kube.RoleClient] = need[kube.RoleClient] || engine.InPod(w.Kind)
		inPodOnly = inPodOnly && engine.InPod(w.Kind)
	}
	if inPodOnly {
		paths = nil
	}
	for _, name := range paths {
		if p, ok := suite.PathOf(name); ok {
			for _, pod := range p.Pods() {
				need[pod] = true
			}
		}
	}
	var out []string
	for _, r := range []string{kube.RoleClient, kube.RoleServerA, kube.RoleServerB, kube.RoleHostClient, kube.RoleHostServer, kube.RoleLocal} {
		if need[r] {
			out = append(out, r)
		}
	}
	return out
}

// prepare connects to (or creates) a target and deploys the run's pods into it.
func (r *run) prepare(ctx context.Context, t suite.Target) (*target, error) {
	tg, profile, err := r.newTarget(t)
	if err != nil {
		return tg, err
	}
	// Registered before anything exists in the cluster, so a failure from here on still
	// cleans up whatever the next steps created.
	r.targets = append(r.targets, tg)
	tg.provider = r.providerFor(t)
	got, err := tg.provider.Ensure(ctx)
	if err != nil {
		return tg, err
	}
	tg.client = got.Client
	// A copy: the targets of one cluster share its provider and add facts of their own.
	known := maps.Clone(got.Facts)
	if err := r.offerSecondary(tg, got.Secondary); err != nil {
		return tg, fmt.Errorf("target %s: %w", t.Name, err)
	}
	placement, runtimeClass, err := r.place(ctx, tg, t)
	if err != nil {
		return tg, fmt.Errorf("target %s: %w", t.Name, err)
	}
	if err := r.checkSecondary(ctx, tg, known); err != nil {
		return tg, fmt.Errorf("target %s: %w", t.Name, err)
	}
	sets, err := r.deploy(ctx, tg, t, profile, got.Image, placement, runtimeClass, known)
	if err != nil {
		return tg, err
	}
	if err := r.settle(ctx, tg, t, profile, sets, known); err != nil {
		return tg, err
	}
	if rf, ok := tg.provider.(runtimeFacter); ok {
		maps.Copy(known, rf.RuntimeFacts(ctx, runtimeClass))
	}
	tg.fingerprint = tg.client.Fingerprint(ctx, tg.fixture, known)
	tg.fingerprint["image"] = got.Image
	tg.fingerprint["rr_method"] = rrMethod(r.opts.Suite)
	if err := r.checkTuning(ctx, tg, profile); err != nil {
		return tg, fmt.Errorf("target %s: %w", t.Name, err)
	}
	r.profilerFor(t, tg, got.ProfileDir)
	if err := r.prepareExternal(ctx, tg, externalHostOf(got.External)); err != nil {
		return tg, fmt.Errorf("target %s: %w", t.Name, err)
	}
	if err := r.prepareGateway(ctx, tg, t, got.Gateway, got.Image, placement); err != nil {
		return tg, fmt.Errorf("target %s: %w", t.Name, err)
	}
	if r.opts.Suite.PerRound() {
		tg.fingerprint["pods"] = "per round: each pairs level's pods only for its samples"
		return tg, r.scaleTo(ctx, tg, 0)
	}
	return tg, nil
}

// newTarget loads a target's tuning profile and names its namespace: the run's own, one per
// variant sharing the cluster, unless the run was given one.
func (r *run) newTarget(t suite.Target) (*target, tuning.Profile, error) {
	tg := &target{name: t.Name, namespace: r.opts.Namespace, ownNamespace: r.opts.Namespace == ""}
	_, shared := r.variantOf(t)
	profile, err := tuningProfile(t)
	if err != nil {
		return tg, profile, err
	}
	tg.profile = profile
	switch {
	case tg.ownNamespace && variantSuffix(t) != "":
		// A namespace name may not exceed 63 characters.
		tg.namespace = "cnibench-" + strings.ToLower(r.id) + "-" + variantSuffix(t)
		tg.namespace = strings.TrimRight(tg.namespace[:min(len(tg.namespace), 63)], "-")
	case tg.ownNamespace:
		tg.namespace = "cnibench-" + strings.ToLower(r.id)
	case shared > 1:
		return tg, profile, fmt.Errorf("target %s: %w", t.Name, &setting.Error{Name: "namespace", Want: fmt.Sprintf("the suite's %d targets sharing the cluster (its runtime, tuning and family variants, or targets of two gateways) need a namespace each; leave it out", shared)})
	}
	return tg, profile, nil
}

// place checks what the run may do in the target and picks its pods' nodes; it returns them
// and the RuntimeClass the pods name.
func (r *run) place(ctx context.Context, tg *target, t suite.Target) (kube.Placement, string, error) {
	policy := t.NetworkPolicy != nil && t.NetworkPolicy.Any()
	access := kube.Access{Namespace: tg.namespace, OwnNamespace: tg.ownNamespace, Policies: policy, SecondaryNetwork: tg.secondary}
	if err := tg.client.Preflight(ctx, access); err != nil {
		return kube.Placement{}, "", err
	}
	po := r.opts.Placement
	po.OneNode = len(r.opts.Suite.TwoNodePaths()) == 0
	placement, err := tg.client.Place(ctx, po)
	if err != nil {
		return kube.Placement{}, "", err
	}
	runtimeClass := r.opts.RuntimeClass
	if t.Runtime != "" {
		runtimeClass = t.Runtime
	}
	if err := tg.client.CheckRuntimeClass(ctx, runtimeClass); err != nil {
		return kube.Placement{}, "", err
	}
	if err := tg.client.CheckFamily(ctx, t.Family, placement); err != nil {
		return kube.Placement{}, "", err
	}
	return placement, runtimeClass, nil
}

// deploy brings up the target's pods and returns the servers of each pair.
func (r *run) deploy(ctx context.Context, tg *target, t suite.Target, profile tuning.Profile, image string, placement kube.Placement,
	runtimeClass string, known map[string]string) ([][]kube.Server, error) {
	// Host-network servers of the runtimes sharing a node must not share ports.
	variant, _ := r.variantOf(t)
	byWorkload, sets, err := servers(r.opts.Suite, serverPortBase+variant*portsPerVariant)
	if err != nil {
		return nil, err
	}
	tg.servers = byWorkload
	rs := roles(r.opts.Suite.Paths, r.opts.Suite.Workloads)
	tg.nodes = placementNodes(placement, len(sets))
	// Pods per round: one pair for the setup figures below, then none until its rounds.
	up := len(sets)
	if r.opts.Suite.PerRound() {
		up = 1
	}
	r.progress("target %s: deploying %d pods (%d pairs) on %s (namespace %s)", t.Name, len(rs)*up, up,
		strings.Join(tg.nodes, ", "), tg.namespace)
	spec := kube.FixtureSpec{
		Namespace: tg.namespace, RunID: r.id, Image: image, PullSecret: r.opts.ImagePullSecret, RuntimeClass: runtimeClass, Family: t.Family, Up: up,
		Placement: placement, Servers: sets, Roles: rs, TolerateTaints: r.opts.Placement.TolerateTaints, Levels: r.opts.Suite.Pairs, Sysctls: profile.Sysctls,
		NetAdmin: len(profile.Offloads) > 0, Secondary: tg.secondary,
		OnStage: func(st kube.Stage) {
			r.progress("target %s: %d pairs up (%d new) in %.1fs: %s", t.Name, st.Pairs, st.NewPairs, st.Took.Seconds(), st.Pods)
		},
	}
	// A namespace the run creates is labelled for its pods; one it is given must admit them.
	if !tg.ownNamespace {
		if err := tg.client.CheckPodSecurity(ctx, spec, hostNetworkPaths(r.opts.Suite.Paths)); err != nil {
			return nil, fmt.Errorf("target %s: %w", t.Name, err)
		}
	}
	r.planNodeProbe(ctx, tg, t, &spec, known)
	tg.fixture, err = tg.client.Deploy(ctx, spec, tg.ownNamespace)
	if err != nil {
		return nil, fmt.Errorf("target %s: %w", t.Name, err)
	}
	if err := checkEnginesCarry(r.opts.Suite, tg.fixture.Family()); err != nil {
		return nil, fmt.Errorf("target %s: %w", t.Name, err)
	}
	if err := checkSecondaryAddresses(tg, known); err != nil {
		return nil, fmt.Errorf("target %s: %w", t.Name, err)
	}
	return sets, nil
}

// settle records the facts of the deployed pods, measures the target's setup, and applies its
// tuning's offloads and its network policy.
func (r *run) settle(ctx context.Context, tg *target, t suite.Target, profile tuning.Profile, sets [][]kube.Server, known map[string]string) error {
	if t.NetworkPolicy != nil {
		known["network_policy"] = t.NetworkPolicy.String()
	}
	known["ip_family"] = tg.fixture.Family()
	r.setupLatencies(ctx, tg, r.startNodeProbe(ctx, tg, t, known))
	if ctx.Err() != nil {
		return fmt.Errorf("target %s: %w", t.Name, ctx.Err())
	}
	offloads, err := r.applyOffloads(ctx, tg, profile)
	if err != nil {
		return fmt.Errorf("target %s: %w", t.Name, err)
	}
	maps.Copy(known, offloads)
	if t.NetworkPolicy != nil && t.NetworkPolicy.Any() {
		if err := r.applyPolicy(ctx, tg, *t.NetworkPolicy, sets[0]); err != nil {
			return fmt.Errorf("target %s: network policy %s: %w", t.Name, t.NetworkPolicy, err)
		}
	}
	return nil
}

// rrMethod says how request/response samples treat idle CPUs, which decides what their
// latency contains.
func rrMethod(s suite.Suite) string {
	if s.AwakeRR() {
		return "keep-awake: lowest-class spinners on the client node's CPUs during tcp-rr and tcp-crr"
	}
	return "idle: CPUs may halt between messages (a VM's wake-up is in the latency)"
}

// hostNetworkPaths lists the paths whose pods are on the host network.
func hostNetworkPaths(paths []string) []string {
	var out []string
	for _, name := range paths {
		if p, _ := suite.PathOf(name); p.HostNetwork {
			out = append(out, name)
		}
	}
	return out
}

// teardown removes what the run created in every target, with its own deadline: it also runs
// after Ctrl-C, when the run's context is already cancelled. The run's objects go first, then
// each cluster is released once, after every target on it is clean.
func (r *run) teardown() error {
	// Bounded, but generous: a slow control plane takes minutes to empty a namespace.
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	errs := make([]error, len(r.targets))
	var wg sync.WaitGroup
	for i, tg := range r.targets {
		if tg.provider == nil {
			continue
		}
		if tg.lost.ControlPlane && !tg.provider.ReleasesObjects() {
			errs[i] = fmt.Errorf("target %s: the run's objects (namespace %s, label %s=%s) stay: %s", tg.name, tg.namespace, kube.LabelRun, r.id, tg.lost)
			continue
		}
		if err := r.stopExternalServers(ctx, tg); err != nil {
			r.progress("target %s: stopping the servers on the external host: %v", tg.name, err)
		}
		// Also after a failed deploy, which may have made some of the cluster-wide objects.
		if len(splitWeights(r.opts.Suite)) > 0 && tg.client != nil && !tg.provider.ReleasesObjects() {
			if err := tg.client.DeleteGateway(ctx, tg.namespace, r.id); err != nil {
				errs[i] = fmt.Errorf("target %s: %w", tg.name, err)
			}
		}
		// Unless releasing the target takes them with it. Namespaces empty in parallel.
		if tg.client != nil && !tg.provider.ReleasesObjects() {
			wg.Add(1)
			go func() {
				defer wg.Done()
				began := time.Now()
				errs[i] = tg.client.Teardown(ctx, tg.namespace, r.id, tg.ownNamespace)
				if errs[i] == nil {
					r.progress("target %s: the run's objects removed in %.1fs", tg.name, time.Since(began).Seconds())
				}
			}()
		}
	}
	wg.Wait()
	// Every provider of the run, each once: the targets' and those of clusters created at
	// once before any target on them was prepared, when one create failed.
	for _, key := range slices.Sorted(maps.Keys(r.providers)) {
		errs = append(errs, r.providers[key].Release(ctx))
	}
	return errors.Join(errs...)
}

// indent prefixes each line written through it, to nest a sub-step's progress.
func indent(w io.Writer) io.Writer { return prefixWriter{w: w, prefix: "    "} }

type prefixWriter struct {
	w      io.Writer
	prefix string
}

func (p prefixWriter) Write(b []byte) (int, error) {
	lines := strings.SplitAfter(string(b), "\n")
	var sb strings.Builder
	for _, l := range lines {
		if l != "" {
			sb.WriteString(p.prefix + l)
		}
	}
	if _, err := io.WriteString(p.w, sb.String()); err != nil {
		return 0, err
	}
	return len(b), nil
}

// placementNodes lists the nodes the pairs use, for the progress line.
func placementNodes(p kube.Placement, pairs int) []string {
	if len(p.Nodes) > 2 && pairs > 1 {
		return p.Nodes[:min(len(p.Nodes), pairs+1)]
	}
	if p.NodeA == p.NodeB {
		return []string{p.NodeA}
	}
	return []string{p.NodeA, p.NodeB}
}
