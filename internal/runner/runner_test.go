package runner

import (
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/agentcmd"
	"github.com/cnibench/cnibench/internal/catalog"
	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/monitor"
	"github.com/cnibench/cnibench/internal/suite"
)

// With the warm-up off the schedule starts at round 1: no sample is discarded.
func TestScheduleWithoutWarmup(t *testing.T) {
	s := suite.Default()
	s.Repetitions = 2
	s.Warmup = suite.Warmup{Off: true}
	steps := Schedule(s, 7)
	if cells := len(s.Matrix()); len(steps) != 2*cells {
		t.Fatalf("%d steps, want %d: two rounds, no warm-up", len(steps), 2*cells)
	}
	for _, st := range steps {
		if st.Warmup() || st.Duration != s.Duration.Duration {
			t.Fatalf("step %d: round %d, %s: a warm-up sample in a run without one", st.Seq, st.Round, st.Duration)
		}
	}
}

// A workload with a duration of its own is measured for it; its warm-up is the suite's.
func TestScheduleWorkloadDuration(t *testing.T) {
	s := suite.Default()
	s.Repetitions = 2
	s.Workloads = []suite.Workload{{Kind: "tcp-stream", Streams: 1}, {Kind: "tcp-rr", Size: 64, Duration: suite.Duration{Duration: 75 * time.Second}}}
	for _, st := range Schedule(s, 3) {
		want := s.Duration.Duration
		switch {
		case st.Warmup():
			want = s.Warmup.Duration
		case st.Combo.Workload.Kind == "tcp-rr":
			want = 75 * time.Second
		}
		if st.Duration != want {
			t.Errorf("step %d (%s, round %d): %s, want %s", st.Seq, st.Combo.Workload.Kind, st.Round, st.Duration, want)
		}
	}
}

func TestScheduleInterleavesEveryRound(t *testing.T) {
	s := suite.Default()
	s.Repetitions = 6
	steps := Schedule(s, 42)
	cells := len(s.Matrix())
	if len(steps) != cells*(s.Repetitions+1) {
		t.Fatalf("%d steps, want %d", len(steps), cells*(s.Repetitions+1))
	}
	orders := map[string]bool{}
	for round := 0; round <= s.Repetitions; round++ {
		seen := map[string]bool{}
		order := ""
		for _, st := range steps[round*cells : (round+1)*cells] {
			if st.Round != round {
				t.Fatalf("step %d is in round %d, expected %d: rounds must not overlap", st.Seq, st.Round, round)
			}
			key := st.Combo.Path + " " + st.Combo.Workload.Engine(time.Second).ID()
			if seen[key] {
				t.Errorf("round %d visits %s twice", round, key)
			}
			seen[key] = true
			order += key + ";"
			want := s.Duration.Duration
			if round == 0 {
				want = s.Warmup.Duration
			}
			if st.Duration != want || st.Warmup() != (round == 0) {
				t.Errorf("step %d: duration %s warm-up %v", st.Seq, st.Duration, st.Warmup())
			}
		}
		if len(seen) != cells {
			t.Errorf("round %d visits %d of %d cells", round, len(seen), cells)
		}
		orders[order] = true
	}
	// Seven shuffles of fifteen cells that all coincide would mean no shuffling at all.
	if len(orders) < 2 {
		t.Error("every round has the same order: the schedule is not shuffled")
	}
	if !reflect.DeepEqual(steps, Schedule(s, 42)) {
		t.Error("the same seed gave a different schedule")
	}
	if reflect.DeepEqual(steps, Schedule(s, 43)) {
		t.Error("a different seed gave the same schedule")
	}
}

func TestServersShareOneContainerPerCommand(t *testing.T) {
	s := suite.Default() // tcp-stream x2 and udp-stream share iperf3; tcp-rr is sockperf; tcp-crr the echo server
	s.Pairs = []int{1, 3}
	s.Workloads = append(s.Workloads, suite.Workload{Kind: engine.CPU, Threads: 1}) // no server
	byWorkload, sets, err := servers(s, serverPortBase+portsPerVariant)
	if err != nil {
		t.Fatal(err)
	}
	if len(sets) != 3 || len(sets[0]) != 3 {
		t.Fatalf("%d pairs of %d server containers, want 3 of 3: %+v", len(sets), len(sets[0]), sets)
	}
	// Every pair's servers listen on ports of their own, named alike.
	ports := map[int]bool{}
	for i, set := range sets {
		for j, srv := range set {
			if ports[srv.Port] || srv.Port < serverPortBase+portsPerVariant {
				t.Errorf("port %d used twice or below the given base", srv.Port)
			}
			ports[srv.Port] = true
			if srv.Name != sets[0][j].Name || !slices.Contains(srv.Argv, strconv.Itoa(srv.Port)) {
				t.Errorf("pair %d server %d: %+v", i, j, srv)
			}
		}
	}
	// The crr echo server, which closes first and leaves TIME_WAIT on its port, listens in a
	// block no other server is given.
	for _, set := range sets {
		for _, srv := range set {
			closes := slices.Contains(srv.Argv, "--close-after-reply")
			if inBlock := srv.Port >= serverPortBase+portsPerVariant+closerPorts; closes != inBlock {
				t.Errorf("server %s on port %d: closes first %v, in the closers' block %v", srv.Name, srv.Port, closes, inBlock)
			}
		}
	}
	s.Pairs = []int{suite.MaxPairs, 1}
	if _, _, err := servers(s, serverPortBase); err != nil {
		t.Errorf("the most pairs a suite may ask for: %v", err)
	}
	tcp1 := byWorkload[s.Workloads[0].Engine(time.Second).ID()]
	udp := byWorkload[s.Workloads[2].Engine(time.Second).ID()]
	if tcp1 != udp {
		t.Errorf("tcp-stream and udp-stream use different iperf3 servers: %d, %d", tcp1, udp)
	}
}

// netperf's server takes two ports, its control port and its data port after it, which no other
// server is given; it sits in the closers' block, where its TCP_CRR would leave TIME_WAIT.
func TestServersKeepNetperfsDataPort(t *testing.T) {
	s := suite.Default()
	s.Pairs = []int{1, 2}
	s.Workloads = append(s.Workloads,
		suite.Workload{Kind: engine.TCPStream, Streams: 1, Tool: engine.NameNetperf},
		suite.Workload{Kind: engine.TCPRR, Size: 1, Tool: engine.NameNetperf})
	byWorkload, sets, err := servers(s, serverPortBase)
	if err != nil {
		t.Fatal(err)
	}
	if len(sets[0]) != 4 {
		t.Fatalf("%d servers, want iperf3, sockperf, the echo server and one netserver: %+v", len(sets[0]), sets[0])
	}
	taken := map[int]string{}
	netservers := 0
	for _, set := range sets {
		for _, srv := range set {
			ports := []int{srv.Port}
			if srv.Argv[0] == "netserver" {
				netservers++
				if srv.DataPort != srv.Port+1 || srv.Port < serverPortBase+closerPorts {
					t.Errorf("netserver %+v: want its data port after its own, in the closers' block", srv)
				}
				ports = append(ports, srv.DataPort)
			} else if srv.DataPort != 0 {
				t.Errorf("%s has a data port %d", srv.Name, srv.DataPort)
			}
			for _, p := range ports {
				if other, ok := taken[p]; ok {
					t.Errorf("port %d given to %s and %s", p, other, srv.Name)
				}
				taken[p] = srv.Name
			}
		}
	}
	if netservers != 2 {
		t.Errorf("%d netservers, want one per pair", netservers)
	}
	if byWorkload["tcp-rr/1B+netperf"] != byWorkload["tcp-stream/1+netperf"] {
		t.Error("netperf's workloads use different servers")
	}
}

func TestRolesFollowPaths(t *testing.T) {
	cases := map[string][]string{
		suite.SameNode:     {kube.RoleClient, kube.RoleServerA},
		suite.CrossNode:    {kube.RoleClient, kube.RoleServerB},
		suite.PodToService: {kube.RoleClient, kube.RoleServerB},
		suite.HostNetwork:  {kube.RoleHostClient, kube.RoleHostServer},
		suite.Localhost:    {kube.RoleLocal},
	}
	for path, want := range cases {
		if got := roles([]string{path}, nil); !reflect.DeepEqual(got, want) {
			t.Errorf("roles(%s) = %v, want %v", path, got, want)
		}
	}
	// A workload inside one pod needs the client pod whatever the paths.
	got := roles([]string{suite.HostNetwork}, []suite.Workload{{Kind: engine.TCPStream}, {Kind: engine.Memory}})
	if want := []string{kube.RoleClient, kube.RoleHostClient, kube.RoleHostServer}; !reflect.DeepEqual(got, want) {
		t.Errorf("roles with a memory workload = %v, want %v", got, want)
	}
	// With nothing but in-pod workloads no path has a server to run.
	got = roles([]string{suite.SameNode, suite.HostNetwork}, []suite.Workload{{Kind: engine.Memory}, {Kind: engine.Stream}})
	if want := []string{kube.RoleClient}; !reflect.DeepEqual(got, want) {
		t.Errorf("roles with in-pod workloads alone = %v, want %v", got, want)
	}
}

// stat builds counters as `cnibench agent stat` reports them.
func stat(boot string, busy, total, cgroup float64, at time.Time) monitor.NodeStat {
	return monitor.NodeStat{BootID: boot, CPUs: 2, CPUBusySeconds: busy, CPUTotalSeconds: total,
		MemTotalBytes: 8 << 30, MemAvailableBytes: 6 << 30, CgroupCPUSeconds: cgroup, CgroupMemoryBytes: 1 << 20, Time: at}
}

func TestResourcesCountEachHostOnce(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 := t0.Add(4 * time.Second)
	// Client and server on one host (the local cluster): 4 s wall, 8 CPU-s total, 6 busy.
	before := []monitor.NodeStat{stat("host-1", 100, 200, 10, t0), stat("host-1", 100, 200, 20, t0)}
	after := []monitor.NodeStat{stat("host-1", 106, 208, 12, t1), stat("host-1", 106, 208, 23, t1)}
	m := engine.Metrics{"throughput_gbps": 8} // 8 Gbit/s for 4 s = 4 GB
	res := resources(before, after, nil, m, 4*time.Second)
	want := map[string]float64{"host_cpu_seconds": 6, "node_cpu_pct": 75, "pod_cpu_seconds": 5, "cpu_s_per_gb": 1.5, "pod_cpu_s_per_gb": 1.25}
	for k, v := range want {
		if math.Abs(res[k]-v) > 1e-9 {
			t.Errorf("%s = %g, want %g", k, res[k], v)
		}
	}
	// The same counters on two hosts: host CPU doubles, the busy percentage does not.
	after2 := []monitor.NodeStat{after[0], stat("host-2", 106, 208, 23, t1)}
	before2 := []monitor.NodeStat{before[0], stat("host-2", 100, 200, 20, t0)}
	res = resources(before2, after2, nil, m, 4*time.Second)
	if res["host_cpu_seconds"] != 12 || res["node_cpu_pct"] != 75 {
		t.Errorf("two hosts: host CPU %g, busy %g%%", res["host_cpu_seconds"], res["node_cpu_pct"])
	}
	rr := resources(before, after, nil, engine.Metrics{"transactions_per_s": 1000}, 4*time.Second)
	if math.Abs(rr["cpu_s_per_1k_tx"]-1.5) > 1e-9 { // 6 CPU-s over 4000 transactions
		t.Errorf("cpu_s_per_1k_tx = %g, want 1.5", rr["cpu_s_per_1k_tx"])
	}
}

// TestResourcesUseTheMeasuredWindow: the clients' own readings around the tool replace the
// exec readings of their host, which also count the execs and API calls around the sample;
// a host without a client window (a remote server's node) keeps its exec readings.
func TestResourcesUseTheMeasuredWindow(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// Exec readings 6 s apart with 9 busy CPU-s; two clients' windows of 4 s on host-1 that
	// overlap, together from busy 101.5 to 105.5 (4 CPU-s) over 8 CPU-s of time.
	before := []monitor.NodeStat{stat("host-1", 100, 200, 10, t0), stat("host-2", 50, 100, 20, t0)}
	after := []monitor.NodeStat{stat("host-1", 109, 212, 12, t0.Add(6*time.Second)), stat("host-2", 53, 112, 23, t0.Add(6*time.Second))}
	w1 := &agentcmd.Window{Before: stat("host-1", 101.5, 202, 10.5, t0.Add(time.Second)), After: stat("host-1", 105, 209.5, 11.5, t0.Add(4900*time.Millisecond))}
	w2 := &agentcmd.Window{Before: stat("host-1", 101.6, 202.1, 10.6, t0.Add(1010*time.Millisecond)), After: stat("host-1", 105.5, 210, 11.6, t0.Add(5*time.Second))}
	res := resources(before, after, []*agentcmd.Window{w1, nil, w2}, engine.Metrics{"throughput_gbps": 8}, 4*time.Second)
	// host-1 over its window: 4 CPU-s, 50 %; host-2 over the execs: 3 CPU-s, 25 %.
	if got := res["host_cpu_seconds"]; math.Abs(got-7) > 1e-9 {
		t.Errorf("host CPU %g, want 4 (host-1's window) + 3 (host-2's execs)", got)
	}
	if got := res["node_cpu_pct"]; math.Abs(got-37.5) > 1e-9 {
		t.Errorf("busy %g %%, want the mean of 50 and 25", got)
	}
}

// TestResourcesLeaveOutTheSpinners: the keep-awake spinners' CPU is not the sample's.
func TestResourcesLeaveOutTheSpinners(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	before := []monitor.NodeStat{stat("host-1", 100, 200, 10, t0)}
	after := []monitor.NodeStat{stat("host-1", 110, 212, 14, t0.Add(6*time.Second))}
	// A 4 s window with 8 CPU-s of time, 6 of them busy, 4 of those spinning.
	w := &agentcmd.Window{Before: stat("host-1", 101, 202, 10.5, t0.Add(time.Second)), After: stat("host-1", 107, 210, 13.5, t0.Add(5*time.Second)),
		AwakeSeconds: 4}
	res := resources(before, after, []*agentcmd.Window{w}, engine.Metrics{"transactions_per_s": 1000}, 4*time.Second)
	if got := res["host_cpu_seconds"]; math.Abs(got-2) > 1e-9 {
		t.Errorf("host CPU %g, want 6 busy - 4 spinning", got)
	}
	if got := res["node_cpu_pct"]; math.Abs(got-25) > 1e-9 {
		t.Errorf("busy %g %%, want 2 of 8 CPU-s", got)
	}
	if got := res["pod_cpu_seconds"]; got != 0 {
		t.Errorf("pod CPU %g, want 4 - 4 spinning", got)
	}
}

func TestClientArgvKeepsAwakeForRequestResponse(t *testing.T) {
	end := pairEnd{clientPod: "c", target: "10.0.0.2", port: 5201}
	for _, c := range []struct {
		kind  string
		awake bool
		want  string
	}{
		{engine.TCPRR, true, "--keep-awake 4 --"},
		{engine.TCPCRR, true, "--keep-awake 4 --"},
		{engine.TCPStream, true, ""},
		{engine.TCPRR, false, ""},
	} {
		ew := engine.Workload{Kind: c.kind, MessageSize: 64, Streams: 1, Duration: 4 * time.Second}
		eng, err := engine.For(ew)
		if err != nil {
			t.Fatal(err)
		}
		argv := strings.Join(clientArgv(eng, ew, end, 4, c.awake), " ")
		if has := strings.Contains(argv, "--keep-awake"); has != (c.want != "") || (c.want != "" && !strings.Contains(argv, c.want)) {
			t.Errorf("%s awake=%v: %s", c.kind, c.awake, argv)
		}
	}
}

func TestCheckSourceNamesBothAddresses(t *testing.T) {
	if err := checkSource("egress", "10.0.0.11", "10.0.0.11", "its own node node1"); err != nil {
		t.Errorf("matching source: %v", err)
	}
	err := checkSource("egress-gateway", "10.0.0.11", "10.0.0.12", "the gateway node2")
	if err == nil || !strings.Contains(err.Error(), "came from 10.0.0.11, expected 10.0.0.12 (the gateway node2)") {
		t.Errorf("mismatch: %v", err)
	}
}

// TestPerPacket: host CPU over the packets the clients' interfaces counted in their windows;
// nothing where a client's window lacks its packets or no packet went through.
func TestPerPacket(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	window := func(before, after int64) *agentcmd.Window {
		b, a := stat("host-1", 100, 200, 10, t0), stat("host-1", 101, 202, 11, t0.Add(time.Second))
		b.NetPackets, a.NetPackets = before, after
		return &agentcmd.Window{Before: b, After: a}
	}
	res := map[string]float64{catalog.HostCPUSeconds: 2}
	perPacket(res, []*agentcmd.Window{window(1000, 301000), window(0, 100000)})
	if got := res[catalog.CPUPerPacket]; math.Abs(got-5) > 1e-9 { // 2 CPU-s over 400,000 packets
		t.Errorf("cpu per packet %g µs, want 5", got)
	}
	for name, ws := range map[string][]*agentcmd.Window{
		"a client without its window": {window(0, 1000), nil},
		"unknown packets":             {window(-1, 1000)},
		"no packets":                  {window(500, 500)},
	} {
		res := map[string]float64{catalog.HostCPUSeconds: 2}
		if perPacket(res, ws); res[catalog.CPUPerPacket] != 0 {
			t.Errorf("%s: cpu per packet %g, want none", name, res[catalog.CPUPerPacket])
		}
	}
}

func TestEnginesMustCarryTheTargetsFamily(t *testing.T) {
	s, err := suite.Parse([]byte("workloads: [{kind: tcp-stream}, {kind: tcp-rr, size: 64}]"))
	if err != nil {
		t.Fatal(err)
	}
	if err := checkEnginesCarry(s, lab.IPv4); err != nil {
		t.Errorf("IPv4: %v", err)
	}
	err = checkEnginesCarry(s, lab.IPv6)
	if err == nil || !strings.Contains(err.Error(), "workloads[1] (tcp-rr/64B): the target's pods are IPv6 and sockperf takes IPv4 only") {
		t.Errorf("IPv6 with sockperf: %v", err)
	}
	// What a suite measuring IPv6 runs: the agent, which carries both.
	v6, _ := suite.Parse([]byte("families: [ipv6]\nworkloads: [{kind: tcp-stream}, {kind: tcp-rr, size: 64}]"))
	if err := checkEnginesCarry(v6.Expand(), lab.IPv6); err != nil {
		t.Errorf("families: [ipv6]: %v", err)
	}
	if loopback(lab.IPv6) != "::1" || loopback("") != "127.0.0.1" {
		t.Error("loopback addresses")
	}
}

// TestPathPodsAreFixtureRoles holds the path table's pod names, which the suite spells
// without compiling kube, to the roles the fixture deploys.
func TestPathPodsAreFixtureRoles(t *testing.T) {
	pairs := map[string]string{suite.PodClient: kube.RoleClient, suite.PodServerA: kube.RoleServerA, suite.PodServerB: kube.RoleServerB,
		suite.PodHostClient: kube.RoleHostClient, suite.PodHostServer: kube.RoleHostServer, suite.PodLocal: kube.RoleLocal}
	for pod, role := range pairs {
		if pod != role {
			t.Errorf("the path table's pod %q is the fixture's role %q", pod, role)
		}
	}
}

// TestVariantNamespaceSuffix checks that a variant's namespace is named after its variant of
// every dimension, in the dimensions' order, with what a namespace name may not hold replaced.
func TestVariantNamespaceSuffix(t *testing.T) {
	for _, c := range []struct {
		target suite.Target
		want   string
	}{
		{suite.Target{Name: "local"}, ""},
		{suite.Target{Name: "local.runsc", Runtime: "runsc"}, "runsc"},
		{suite.Target{Name: "local.kata.v2.ipv6", Runtime: "kata.v2", Family: "ipv6"}, "kata-v2-ipv6"},
		{suite.Target{Name: "local.runc.default.ipv4", Runtime: "runc", Tuning: "default", Family: "ipv4"}, "runc-default-ipv4"},
		{suite.Target{Name: "envoy.runsc", Runtime: "runsc", Gateway: "envoy"}, "runsc-envoy"},
	} {
		if got := variantSuffix(c.target); got != c.want {
			t.Errorf("%s: %q, want %q", c.target.Name, got, c.want)
		}
	}
}
