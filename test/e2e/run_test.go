//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/agentcmd"
	"github.com/cnibench/cnibench/internal/catalog"
	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/runner"
	"github.com/cnibench/cnibench/internal/store"
	"github.com/cnibench/cnibench/internal/suite"
	"github.com/cnibench/cnibench/internal/testsupport"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const runCluster = "cnbrun"

// shortSamples is the number of samples shortSuite schedules: 5 paths x 5 workloads x 2 rounds.
const shortSamples = 25 * 2

// shortSuite covers every path and every workload, briefly.
const shortSuite = `
paths: [host-network, same-node, cross-node, pod-to-service, localhost]
workloads:
  - {kind: tcp-stream, streams: 1}
  - {kind: tcp-stream, streams: 2}
  - {kind: udp-stream, size: 1300, rate: 200M}
  - {kind: tcp-rr, size: 64}
  - {kind: tcp-crr, size: 64}
repetitions: 2
duration: 1s
warmup: off
`

type jsonRow struct {
	Target, Path, Workload, Metric string
	Pairs                          int
	N                              int
	Mean, Median, Min, Max         float64
	Low                            float64 `json:"ci95_low"`
	High                           float64 `json:"ci95_high"`
}

// TestRunOnLocalCluster is the acceptance test of `cnibench run`.
func TestRunOnLocalCluster(t *testing.T) {
	before := snapshot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	defer forceDelete(runCluster)
	// With the lab registry, which the least-privilege run pulls its image from.
	if out, err := cli(ctx, "cluster", "create", "--name", runCluster, "--registry"); err != nil {
		t.Fatalf("create: %v\n%s", err, out)
	}
	dir := t.TempDir()
	suiteFile := filepath.Join(dir, "suite.yaml")
	results := filepath.Join(dir, "results.db")
	doc := runSuite(ctx, t, shortSuite, suiteFile, results)
	if doc.Run.Status != "complete" {
		t.Errorf("run status %q", doc.Run.Status)
	}
	checkPlausible(t, doc.Rows)

	t.Run("run readable from the store", func(t *testing.T) {
		db, err := store.Open(ctx, results)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		r, err := db.Run(ctx, doc.Run.ID)
		if err != nil || r.Status != "complete" {
			t.Fatalf("run %s: %+v, %v", doc.Run.ID, r, err)
		}
		samples, err := db.Samples(ctx, doc.Run.ID)
		if err != nil {
			t.Fatal(err)
		}
		// 5 paths x 5 workloads x 2 rounds (the warm-up round's storage is the precision
		// test's), and the setup figures: the pods' startup, their memory, the Service's
		// programming and a new pod's network readiness.
		if want := shortSamples + 4; len(samples) != want {
			t.Errorf("%d samples stored, want %d", len(samples), want)
		}
		for _, s := range samples {
			if s.Path == runner.SetupPath {
				continue
			}
			if s.Error != "" || s.Raw == "" || len(s.Metrics) == 0 {
				t.Errorf("sample %d (%s %s): error %q, %d metrics, %d bytes raw", s.Seq, s.Path, s.Workload, s.Error, len(s.Metrics), len(s.Raw))
			}
			checkPacketCount(t, s, time.Second)
		}
		targets, err := db.Targets(ctx, doc.Run.ID)
		if err != nil || len(targets) != 1 || targets[0].Fingerprint["kubernetes_version"] != lab.DefaultKubernetesVersion || targets[0].Fingerprint["pod_mtu"] == "" {
			t.Errorf("targets: %+v, %v", targets, err)
		}
	})
	w := newWorkload(ctx, t, runCluster)
	t.Run("nothing of the run left in the cluster", func(t *testing.T) {
		nss, err := w.cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, ns := range nss.Items {
			if strings.HasPrefix(ns.Name, "cnibench-") {
				t.Errorf("namespace %s (%s) survived the run", ns.Name, ns.Status.Phase)
			}
		}
		pods, err := w.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: kube.LabelRun})
		if err != nil || len(pods.Items) > 0 {
			t.Errorf("pods of a run survived: %d, %v", len(pods.Items), err)
		}
	})
	t.Run("tuning profiles applied in the pods, read back, the host's values unchanged", func(t *testing.T) {
		runTunings(ctx, t, dir)
	})
	t.Run("RFC 2544 rate search on the host-network path alone", func(t *testing.T) {
		runSearch(ctx, t, dir)
	})
	t.Run("ten pairs at once", func(t *testing.T) {
		runPairs(ctx, t, dir)
	})
	t.Run("precision: rounds until a loose target, a budget for an impossible one", func(t *testing.T) {
		runAdaptive(ctx, t, dir)
	})
	t.Run("Ctrl-C keeps finished samples and marks the run partial", func(t *testing.T) {
		interruptRun(ctx, t, suiteFile, results, w)
	})
	t.Run("preflight: unreachable API server and missing RBAC", func(t *testing.T) {
		preflightErrors(ctx, t, dir)
	})
	t.Run("in-house RR agrees with sockperf on the cross-node path", func(t *testing.T) {
		validateRR(ctx, t, w)
	})
	t.Run("netperf agrees with iperf3, sockperf and the in-house RR on the same paths", func(t *testing.T) {
		validateNetperf(ctx, t, dir)
	})
	t.Run("a cluster reached by kubeconfig loses a pod and its API server, and keeps the run's namespace", func(t *testing.T) {
		clusterMisbehaves(ctx, t, dir, runCluster)
	})
	// Last: it kills the cluster's components.
	t.Run("a run survives its kubelet, containerd and API server dying", func(t *testing.T) {
		loseComponents(ctx, t, dir)
	})
	if out, err := cli(ctx, "cluster", "delete", "--name", runCluster); err != nil {
		t.Fatalf("delete: %v\n%s", err, out)
	}
	assertClean(t, before)
}

// runDoc is what `cnibench run -o json` prints, as far as the tests read it.
type runDoc struct {
	Run     record.Run
	Rows    []jsonRow
	Targets []struct {
		Name        string            `json:"name"`
		Fingerprint map[string]string `json:"fingerprint"`
	}
}

// runSuite writes a suite to suiteFile, runs it on the shared local cluster with results in
// results, and returns the JSON summary.
func runSuite(ctx context.Context, t *testing.T, suite, suiteFile, results string) runDoc {
	t.Helper()
	return runSuiteOn(ctx, t, suite, suiteFile, results, "--cluster", runCluster)
}

// runSuiteOn is runSuite on the clusters the suite names, or those args name.
func runSuiteOn(ctx context.Context, t *testing.T, suite, suiteFile, results string, args ...string) runDoc {
	t.Helper()
	if err := os.WriteFile(suiteFile, []byte(suite), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	stdout, stderr, err := cliSplit(ctx, append([]string{"run", "-f", suiteFile, "--results", results, "-o", "json"}, args...)...)
	t.Logf("run of %s took %s; progress:\n%s", filepath.Base(suiteFile), time.Since(start).Round(time.Second), stderr)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stdout)
	}
	var doc runDoc
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("run -o json: %v\n%s", err, stdout)
	}
	return doc
}

// checkPlausible applies physical sanity bounds to every summarised metric.
func checkPlausible(t *testing.T, rows []jsonRow) {
	t.Helper()
	got := map[string]jsonRow{}
	for _, r := range rows {
		got[r.Path+" "+r.Workload+" "+r.Metric] = r
	}
	paths := []string{"host-network", "same-node", "cross-node", "pod-to-service", "localhost"}
	for _, p := range paths {
		for _, wl := range []string{"tcp-stream", "udp-stream", "tcp-rr", "tcp-crr"} {
			found := false
			for key := range got {
				if strings.HasPrefix(key, p+" "+wl+"/") {
					found = true
				}
			}
			if !found {
				t.Errorf("no %s figures on path %s", wl, p)
			}
		}
	}
	loop := loopback(got)
	for key, r := range got {
		if r.Path == runner.SetupPath {
			continue
		}
		if r.N != 2 {
			t.Errorf("%s: n = %d, want 2", key, r.N)
		}
		// With n = 2 a t-interval is the mean +- 12.7 standard errors: every figure here is
		// non-negative, so the interval must have been kept within the metric's range.
		if lo, hi := catalog.Bounds(r.Metric); r.Low < lo || r.High > hi {
			t.Errorf("%s: CI [%g, %g] outside the metric's range [%g, %g]", key, r.Low, r.High, lo, hi)
		}
		switch {
		case r.Metric == "throughput_gbps" && strings.HasPrefix(r.Workload, "udp-stream/"):
			// iperf3 paces UDP at the offered 200 Mbit/s, so what arrives is a unit check: bits
			// for bytes or Mbit for Gbit would be off by 8x or 1000x. Loss may take some of it.
			if r.Mean < 0.1 || r.Mean > 0.21 {
				t.Errorf("%s: %.3f Gbit/s received of 0.2 offered", key, r.Mean)
			}
		case r.Metric == "throughput_gbps":
			checkTCPThroughput(t, key, r, loop)
		case r.Metric == "loss_pct":
			if r.Mean < 0 || r.Mean > 100 {
				t.Errorf("%s: loss %.2f %%", key, r.Mean)
			}
		case strings.HasSuffix(r.Metric, "cpu_seconds") || r.Metric == "node_cpu_pct":
			if r.Mean <= 0 {
				t.Errorf("%s: CPU %g", key, r.Mean)
			}
		case r.Metric == "transactions_per_s" || r.Metric == "connections_per_s":
			if r.Mean <= 0 {
				t.Errorf("%s: rate %g", key, r.Mean)
			}
		}
		if strings.HasSuffix(r.Metric, "latency_p50_us") {
			base := strings.TrimSuffix(key, "latency_p50_us")
			p90, p99 := got[base+"latency_p90_us"], got[base+"latency_p99_us"]
			if !(r.Mean > 0 && r.Mean <= p90.Mean && p90.Mean <= p99.Mean) {
				t.Errorf("%s: p50 %g, p90 %g, p99 %g", base, r.Mean, p90.Mean, p99.Mean)
			}
		}
	}
}

// checkTCPThroughput bounds a TCP throughput by loopback inside one pod, measured in the same
// run. Two pods on one node can come close to it: with two streams on these two vCPUs both paths
// are CPU-bound kernel copies (same-node 23.4 [18.2, 26.3] Gbit/s vs loopback 24.9 [22.1, 26.2]
// over 6 samples of 4 s), and single 1 s samples swing further (25.2 vs 18.7 once). Hence a
// factor of two, and an absolute bound no two vCPUs reach, which a unit mistake (x8, x1000)
// crosses on every path alike.
func checkTCPThroughput(t *testing.T, key string, r jsonRow, loop float64) {
	t.Helper()
	if r.Mean <= 0 || r.Mean > 100 || r.Mean > 2*loop {
		t.Errorf("%s: %.2f Gbit/s, loopback %.2f", key, r.Mean, loop)
	}
}

// loopback is the best loopback TCP throughput of the run (the highest mean over its stream
// counts): a busy neighbour can halve both 1 s samples of one cell (4.9 and 7.5 Gbit/s once,
// against 27.8 in the warm-up), which says nothing about the other paths' plausibility.
func loopback(got map[string]jsonRow) float64 {
	best := 0.0
	for _, r := range got {
		if r.Path == "localhost" && r.Metric == "throughput_gbps" && strings.HasPrefix(r.Workload, "tcp-stream/") {
			best = max(best, r.Mean)
		}
	}
	return best
}

// validateRR runs the in-house RR client and sockperf, interleaved, between the same two pods.
func validateRR(ctx context.Context, t *testing.T, w *workload) {
	c, err := kube.Connect(w.kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	wl := engine.Workload{Kind: engine.TCPRR, MessageSize: 64, Duration: 2 * time.Second}
	sp, err := engine.For(wl)
	if err != nil {
		t.Fatal(err)
	}
	const spPort, echoPort = 26001, 26002
	spec := kube.FixtureSpec{
		Namespace: "cnbval", RunID: "validate", Image: w.image,
		Placement: kube.Placement{NodeA: "node1", NodeB: "node2"},
		Servers: [][]kube.Server{{
			{Name: "sockperf", Argv: sp.ServerArgv(wl, spPort), Port: spPort},
			{Name: "echo", Argv: []string{"cnibench", "agent", "echo-server", "--port", "26002", "--size", "64"}, Port: echoPort},
		}},
		Roles: []string{kube.RoleClient, kube.RoleServerB},
	}
	f, err := c.Deploy(ctx, spec, true)
	defer c.Teardown(context.Background(), "cnbval", "validate", true) //nolint:errcheck
	if err != nil {
		t.Fatal(err)
	}
	server := f.Pod(kube.RoleServerB, 0).Status.PodIP
	client := f.Pod(kube.RoleClient, 0).Name
	testsupport.KeepCPUsAwake(t)
	var ours, theirs []float64
	for round := 0; round < 5; round++ {
		out, err := c.Exec(ctx, "cnbval", client, kube.ClientContainer, sp.ClientArgv(wl, server, spPort))
		if err != nil {
			t.Fatal(err)
		}
		m, err := sp.Parse(wl, out)
		if err != nil {
			t.Fatal(err)
		}
		theirs = append(theirs, m["latency_p50_us"])
		out, err = c.Exec(ctx, "cnbval", client, kube.ClientContainer,
			[]string{"cnibench", "agent", "rr", "--target", server, "--port", "26002", "--duration", "2s", "--size", "64"})
		if err != nil {
			t.Fatal(err)
		}
		var r agentcmd.Result
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("rr output: %v\n%s", err, out)
		}
		ours = append(ours, r.LatencyUsec.P50)
	}
	sort.Float64s(ours)
	sort.Float64s(theirs)
	// Each tool is judged by its least disturbed round: other load on the machine can only add
	// latency, and it hits sockperf's sleeping loop harder than Go's spinning scheduler.
	ratio := ours[0] / theirs[0]
	t.Logf("RTT p50 cross-node, best of 5 rounds: cnibench rr %.1f us, sockperf %.1f us, ratio %.2f (all rounds: %v vs %v)",
		ours[0], theirs[0], ratio, ours, theirs)
	// Both measure one TCP round trip of 64 bytes between the same pods, with the CPUs kept out
	// of idle (sockperf sleeps between messages, Go spins a moment; on an idle VM that alone
	// made them differ by up to 4x). With the wake-up controlled, six CI runs gave ratios of
	// 0.97 to 1.78 (Go's netpoller adds a few microseconds, more on a busy machine); measuring
	// something else shows as far more: a connect per transaction is about 7x, Nagle with
	// delayed ACKs about 1000x. Hence a factor of 2.5.
	if ratio < 1/2.5 || ratio > 2.5 {
		t.Errorf("in-house RR p50 %.1f us vs sockperf %.1f us: ratio %.2f outside [1/2.5, 2.5]", ours[0], theirs[0], ratio)
	}
}

// netperfSuite measures two paths with netperf and with the tools cnibench uses by default,
// iperf3, sockperf and the in-house RR client, interleaved; pod-to-service also proves
// that the Service fronts netperf's data port.
const netperfSuite = `
paths: [cross-node, pod-to-service]
workloads:
  - {kind: tcp-stream, streams: 1, size: 131072}
  - {kind: tcp-stream, streams: 1, size: 131072, tool: netperf}
  - {kind: tcp-rr, size: 64}
  - {kind: tcp-rr, size: 64, tool: cnibench}
  - {kind: tcp-rr, size: 64, tool: netperf}
repetitions: 3
duration: 2s
warmup: 1s
`

// validateNetperf runs netperfSuite and holds netperf's figures to the other tools' on the same
// path, each tool judged by its least disturbed round: throughput within [0.5, 1.25] of
// iperf3's; request/response figures within a factor of 2 of sockperf's and of 4 of the
// in-house client's (their wake-ups, below).
func validateNetperf(ctx context.Context, t *testing.T, dir string) {
	doc := runSuite(ctx, t, netperfSuite, filepath.Join(dir, "netperf.yaml"), filepath.Join(dir, "netperf.db"))
	rows := map[string]jsonRow{}
	for _, r := range doc.Rows {
		rows[r.Path+" "+r.Workload+" "+r.Metric] = r
	}
	for _, path := range []string{suite.CrossNode, suite.PodToService} {
		for _, c := range netperfChecks() {
			ours, theirs := c.figure(rows[path+" "+c.ours+" "+c.metric]), c.figure(rows[path+" "+c.netperf+" "+c.metric])
			if ours <= 0 || theirs <= 0 {
				t.Errorf("%s %s: %s %v, %s %v: want both measured", path, c.metric, c.ours, ours, c.netperf, theirs)
				continue
			}
			ratio := theirs / ours
			t.Logf("%s %s (%s): netperf %.4g, %s %.4g, ratio %.2f", path, c.metric, c.judged, theirs, c.ours, ours, ratio)
			if ratio < c.lo || ratio > c.hi {
				t.Errorf("%s %s (%s): netperf %.4g against %s %.4g, ratio %.2f outside [%.2f, %.2f]", path, c.metric, c.judged, theirs, c.ours, ours, ratio, c.lo, c.hi)
			}
		}
	}
}

// netperfCheck is one of validateNetperf's comparisons: netperf's workload against ours on
// metric, judged on the rows' means or on their best rounds, within [lo, hi].
type netperfCheck struct {
	ours, netperf, metric string
	judged                string // "mean" or "best round"
	lo, hi                float64
}

// figure is the row's value the check judges: its mean, or its best round (the lowest latency,
// the highest rate).
func (c netperfCheck) figure(r jsonRow) float64 {
	switch {
	case c.judged == "mean":
		return r.Mean
	case c.metric == catalog.LatencyP50:
		return r.Min
	default:
		return r.Max
	}
}

// netperfChecks lists validateNetperf's comparisons with their reasons.
func netperfChecks() []netperfCheck {
	return []netperfCheck{
		// One connection, 128 KiB writes, for as long: the same bytes on the same path. But the
		// tools differ on a veth path: in two namespaces on this machine (6 to 8 interleaved
		// pairs of 2-s runs, three times) netperf reached 0.61 to 0.90 of iperf3, and 0.54 with
		// CPU-bound processes beside them; iperf 2, which like netperf blocks in each write
		// where iperf3 waits in select, sat between (0.75 of iperf3). CI's cluster gave 0.74
		// to 1.14. Hence netperf may fall to half of iperf3, and not exceed it by a quarter. Other
		// work on the machine only takes throughput away (on 2026-12-08, beside a second lane of
		// tests, one of iperf3's cross-node rounds fell to 3.4 Gbit/s against 11.0 and 9.1 in
		// the others, a mean ratio of 1.37), so each tool is judged by its best round.
		{"tcp-stream/1x128K", "tcp-stream/1x128K+netperf", catalog.Throughput, "best round", 0.5, 1.25},
		// One 64-byte transaction in flight on one connection: the same round trip. Every tool's
		// reader is woken either on the CPU that received the reply or on the other one, which
		// pays an inter-processor interrupt and a hypervisor exit (about 35 µs here,
		// docs/measuring.md), and a round keeps the scheduler's choice: on 2026-12-07, with
		// netperf at 22 µs in every round on pod-to-service, sockperf's rounds gave 82, 76 and
		// 21 µs (mean ratio 0.37). Other work can only add latency, so each tool is judged by
		// its least disturbed round, sockperf (C blocking in recv like netperf) within a factor
		// of two on both figures.
		{"tcp-rr/64B", "tcp-rr/64B+netperf", catalog.TransactionRate, "best round", 0.5, 2},
		{"tcp-rr/64B", "tcp-rr/64B+netperf", catalog.LatencyP50, "best round", 0.5, 2},
		// The in-house Go client's best round has stayed 6 to 11 µs above netperf's at 15 µs (its
		// netpoller's wake-up, ratio down to 0.58); its agreement with sockperf is validateRR's
		// (best of five rounds), and a factor of four here still catches a unit or path mistake.
		// Its rate is held to no bound: on a machine busy with other work its mean carries a
		// tail of descheduled round trips (about 2.5 times netperf's mean) that its median does
		// not.
		{"tcp-rr/64B+cnibench", "tcp-rr/64B+netperf", catalog.LatencyP50, "best round", 0.25, 2},
		{"tcp-rr/64B+cnibench", "tcp-rr/64B+netperf", catalog.TransactionRate, "mean", 0, math.Inf(1)},
	}
}

// preflightErrors checks the two errors a user of a remote cluster meets first.
func preflightErrors(ctx context.Context, t *testing.T, dir string) {
	// Nothing listens on loopback port 1: the API server is unreachable.
	dead := filepath.Join(dir, "dead.kubeconfig")
	if err := os.WriteFile(dead, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := cli(ctx, "run", "--kubeconfig", dead, "--image", "x", "--results", dir)
	if err == nil || !strings.Contains(out, "cannot reach the API server at https://127.0.0.1:1") {
		t.Errorf("unreachable API server: err=%v\n%s", err, out)
	}
	// A real user the cluster knows but grants nothing: a certificate from the cluster's own CA.
	nobody := userKubeconfig(t, runCluster, "cnb-nobody", dir)
	out, err = cli(ctx, "run", "--kubeconfig", nobody, "--image", "x", "--results", dir)
	if err == nil || !strings.Contains(out, "missing RBAC permissions") || !strings.Contains(out, "create pods/exec") || !strings.Contains(out, "cnibench rbac") {
		t.Errorf("user without RBAC: err=%v\n%s", err, out)
	}
	t.Run("least privilege: the same user runs once granted what cnibench rbac prints", func(t *testing.T) {
		leastPrivilegeRun(ctx, t, dir, nobody)
	})
}

// leastPrivilegeSuite is a short run of the pod paths, as a platform team's namespace allows.
const leastPrivilegeSuite = `
paths: [same-node, cross-node, pod-to-service]
workloads: [{kind: tcp-stream, streams: 1}, {kind: tcp-rr, size: 64, tool: cnibench}]
repetitions: 2
duration: 1s
warmup: off
`

// leastPrivilegeRun grants the user of kubeconfig what `cnibench rbac` prints for a namespace
// and nothing else, and runs through it as a remote target, with the tools image pushed to the
// cluster's lab registry (TLS, a password) and pulled by the nodes with the namespace's pull
// Secret: the run completes with its fingerprint, keeps to the namespace (it is left empty,
// not deleted), and the user can still do nothing beyond (read a Secret, make a namespace).
func leastPrivilegeRun(ctx context.Context, t *testing.T, dir, kubeconfig string) {
	const ns = "cnb-lp"
	w := newWorkload(ctx, t, runCluster)
	grantNamespace(ctx, t, w, dir, ns, "cnb-nobody")
	suiteFile := filepath.Join(dir, "least.yaml")
	if err := os.WriteFile(suiteFile, []byte(leastPrivilegeSuite), 0o644); err != nil {
		t.Fatal(err)
	}
	image := pushToLabRegistry(ctx, t, w, runCluster, ns)
	// Without the Secret the registry refuses the nodes: the run says so, naming the image.
	out, err := cli(ctx, "run", "-f", suiteFile, "--kubeconfig", kubeconfig, "--namespace", ns, "--image", image,
		"--results", filepath.Join(dir, "least-nosecret.db"))
	if err == nil || !strings.Contains(out, image) || !(strings.Contains(out, "ErrImagePull") || strings.Contains(out, "ImagePullBackOff")) {
		t.Errorf("a run without the pull Secret: err=%v, want the pull's failure named\n%s", err, out)
	} else {
		t.Logf("a run without the pull Secret: %s", lastLine(out))
	}
	// What the runs below change, the audit log says; what exists outside the namespace must
	// be the same after them.
	mark, before := auditMark(t, runCluster), objectsOutside(ctx, t, w, ns)
	defer func() {
		if n := checkAuditedWithin(t, runCluster, mark, "cnb-nobody", ns); n < 10 {
			t.Errorf("the audit log holds %d changes by the run's user in %s: too few for a run", n, ns)
		}
		if after := objectsOutside(ctx, t, w, ns); !slices.Equal(before, after) {
			t.Errorf("objects outside %s changed:\nbefore %v\nafter  %v", ns, before, after)
		}
	}()
	out, err = cli(ctx, "run", "-f", suiteFile, "--kubeconfig", kubeconfig, "--namespace", ns, "--image", image,
		"--image-pull-secret", labPullSecret, "--results", filepath.Join(dir, "least.db"), "-o", "json")
	if err != nil {
		t.Fatalf("run with the rbac objects' permissions only: %v\n%s", err, out)
	}
	checkPulled(ctx, t, w, ns, image)
	doc := summaryOf(t, out, 1)
	if fp := doc.Targets[0].Fingerprint; doc.Run.Status != "complete" || fp["node_a_kernel"] == "" || fp["kube_proxy_mode"] != lab.ProxyNftables {
		t.Errorf("run %q, fingerprint %v", doc.Run.Status, doc.Targets[0].Fingerprint)
	}
	// The namespace keeps the cluster's Pod Security default (baseline): the host-network
	// path is refused before anything is deployed, with the label that would admit it.
	hostSuite := filepath.Join(dir, "least-host.yaml")
	if err := os.WriteFile(hostSuite, []byte(strings.Replace(leastPrivilegeSuite, "paths: [same-node,", "paths: [host-network, same-node,", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = cli(ctx, "run", "-f", hostSuite, "--kubeconfig", kubeconfig, "--namespace", ns, "--image", w.image,
		"--results", filepath.Join(dir, "least-host.db"))
	if err == nil || !strings.Contains(out, kube.LabelPodSecurityEnforce+"=privileged") || !strings.Contains(out, "paths host-network need") {
		t.Errorf("host-network in a baseline namespace: err=%v\n%s", err, out)
	}
	pods, err := w.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("pods left in %s: %d, %v", ns, len(pods.Items), err)
	}
	if _, err := w.cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
		t.Errorf("the run's given namespace is gone: %v", err)
	}
	c, err := kube.Connect(kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CS.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the granted user lists Secrets: %v", err)
	}
	if _, err := c.CS.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cnb-lp-other"}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the granted user creates a namespace: %v", err)
	}
}

// interruptRun sends SIGINT to a run after a few samples and checks what it leaves.
func interruptRun(ctx context.Context, t *testing.T, suiteFile, results string, w *workload) {
	s := startCLI(t, "run", "-f", suiteFile, "--cluster", runCluster, "--results", results)
	if !s.waitLine(t, fmt.Sprintf("[  4/%d]", shortSamples), 5*time.Minute) {
		t.Fatalf("run ended early:\n%s", s.output())
	}
	if err := s.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := s.wait(t, 3*time.Minute); err == nil {
		t.Fatalf("an interrupted run exited 0:\n%s", s.output())
	}
	if !strings.Contains(s.output(), "interrupted: run ") || !strings.Contains(s.output(), "stored as partial") {
		t.Errorf("no clear interruption message:\n%s", s.output())
	}
	db, err := store.Open(ctx, results)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	runs, err := db.Runs(ctx)
	if err != nil || len(runs) == 0 {
		t.Fatalf("runs: %v, %v", runs, err)
	}
	last := runs[0] // newest first
	samples, err := db.Samples(ctx, last.ID)
	if err != nil {
		t.Fatal(err)
	}
	if last.Status != "partial" || len(samples) < 4 || len(samples) >= shortSamples {
		t.Errorf("interrupted run %s: status %q with %d samples", last.ID, last.Status, len(samples))
	}
	for _, smp := range samples {
		if smp.Error != "" || len(smp.Metrics) == 0 {
			t.Errorf("stored sample %d of the interrupted run is incomplete: %q", smp.Seq, smp.Error)
		}
	}
	nss, err := w.cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range nss.Items {
		if strings.HasPrefix(ns.Name, "cnibench-") {
			t.Errorf("namespace %s survived the interrupted run", ns.Name)
		}
	}
}

// checkPacketCount holds the packets behind a sample's CPU per packet (its host CPU over the
// figure) against iperf3's own count on the same path: a UDP sample's client sends each
// datagram once through its pod's interface, so the interface's packets are the datagrams the
// server received over the sample's duration, over one minus the loss, plus the control
// connection's few dozen. Every pod path of every other network workload has a figure.
func checkPacketCount(t *testing.T, s record.Sample, d time.Duration) {
	t.Helper()
	perPkt, ok := s.Resources[catalog.CPUPerPacket]
	if s.Path == suite.Localhost {
		if ok {
			t.Errorf("sample %d (%s %s): cpu per packet %g where no packet crosses its interface", s.Seq, s.Path, s.Workload, perPkt)
		}
		return
	}
	if !ok || !(perPkt > 0) {
		t.Errorf("sample %d (%s %s): cpu per packet %g (present %v), want positive", s.Seq, s.Path, s.Workload, perPkt, ok)
		return
	}
	if !strings.HasPrefix(s.Workload, "udp-stream") || s.Path == suite.HostNetwork {
		return // a host-network client's interfaces also carry the node's own traffic
	}
	packets := s.Resources[catalog.HostCPUSeconds] * 1e6 / perPkt
	sent := s.Metrics[catalog.PacketRate] * d.Seconds() / (1 - s.Metrics[catalog.Loss]/100)
	if r := packets / sent; r < 0.9 || r > 1.1 {
		t.Errorf("sample %d (%s %s): the client's interface counted %.0f packets, iperf3 %.0f datagrams sent", s.Seq, s.Path, s.Workload, packets, sent)
	}
}
