//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/internal/cluster/binaries"
	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/lab"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The runtime test's clusters: containerd with every handler, and CRI-O.
const (
	runtimeCluster = "e2ert"
	crioCluster    = "e2ecr"
)

// runtimeSuite measures every local handler side by side on a containerd cluster, and runc on a
// CRI-O cluster, two pairs at the top level, with a network, a cpu and two memory workloads
// (sysbench's reads and writes, STREAM's kernels over 8 MiB arrays: the plumbing, not a figure
// of memory); the pods of a pairs level live per round, as in the shipped runtime study, whose
// way of setting a figure per container beside the run's it shares.
const runtimeSuite = `
targets:
  - {name: containerd, local: {cluster: ` + runtimeCluster + `}, runtimes: [runc, crun, runsc, youki]}
  - {name: crio, local: {cluster: ` + crioCluster + `, cri: crio, registry: true}, runtimes: [runc]}
paths: [cross-node]
pairs: [1, 2]
workloads:
  - {kind: tcp-rr, size: 64, tool: cnibench}
  - {kind: cpu, threads: 1}
  - {kind: memory, threads: 1}
  - {kind: stream, threads: 1, size: 8388608}
repetitions: 2
duration: 1s
warmup: off
pods: round
reference:
  study: "the runtime study's figures, per container"
  figures:
    - {target: crio.runc, path: in-pod, workload: stream/1x8M, metric: stream_copy_mbps, pairs: 2, value: 10940.5}
    - {target: crio.runc, path: in-pod, workload: cpu/1, metric: cpu_ops_per_s, pairs: 2, perPair: true, value: 1000}
`

// TestRunComparesRuntimes runs a suite over runc, crun, gVisor and youki under containerd, and
// runc under CRI-O, on clusters the run creates. While it measures, each pod must be a
// container of its own CRI and handler, found in that handler's state on the node (not just
// named by a RuntimeClass); afterwards every runtime has its figures and its runtime in the
// fingerprint; the CRI-O cluster's nodes pull an image from its lab registry; and the host is
// clean: gVisor's sandboxes and gofers, CRI-O's storage and conmons, and their mounts included.
func TestRunComparesRuntimes(t *testing.T) {
	before := snapshot(t)
	defer forceDelete(runtimeCluster)
	defer forceDelete(crioCluster)
	dir := t.TempDir()
	suiteFile := filepath.Join(dir, "runtimes.yaml")
	if err := os.WriteFile(suiteFile, []byte(runtimeSuite), 0o644); err != nil {
		t.Fatal(err)
	}
	// Kept for the pull below, deleted by the test.
	run := startCLI(t, "run", "-f", suiteFile, "--store", filepath.Join(dir, "results.db"), "-o", "json", "--keep")
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	w := newHandlerWatch()
	tick := time.NewTicker(time.Second)
	for run.running() && ctx.Err() == nil {
		w.observe(ctx, t)
		<-tick.C
	}
	tick.Stop()
	t.Run("each pod runs under its handler, one target's pods at a time", w.checkMost)
	if err := run.wait(t, time.Minute); err != nil {
		t.Fatalf("run: %v\n%s", err, run.output())
	}
	t.Logf("output:\n%s", run.output())
	checkRuntimeResults(t, run.output())
	t.Run("CRI-O nodes pull from the lab registry", func(t *testing.T) { crioPullsFromLabRegistry(ctx, t, dir) })
	for _, name := range []string{runtimeCluster, crioCluster} {
		if out, err := cli(ctx, "cluster", "delete", "--name", name); err != nil {
			t.Errorf("delete %s: %v\n%s", name, err, out)
		}
	}
	assertClean(t, before)
}

// crioPullsFromLabRegistry runs a short suite on the CRI-O cluster as a remote target whose
// image is in the cluster's lab registry: CRI-O trusts the registry's CA (in its own
// /etc/containers, not the host's), its policy admits the registry, and the kubelet passes the
// namespace's pull Secret.
func crioPullsFromLabRegistry(ctx context.Context, t *testing.T, dir string) {
	const ns = "cnb-crio-pull"
	w := newWorkload(ctx, t, crioCluster)
	if _, err := w.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	image := pushToLabRegistry(ctx, t, w, crioCluster, ns)
	suiteFile := filepath.Join(dir, "pull.yaml")
	if err := os.WriteFile(suiteFile, []byte("paths: [cross-node]\nworkloads: [{kind: tcp-rr, size: 64, tool: cnibench}]\nrepetitions: 2\nduration: 1s\nwarmup: off\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ := runLogged(ctx, t, "-f", suiteFile, "--kubeconfig", w.kubeconfig, "--namespace", ns, "--image", image,
		"--image-pull-secret", labPullSecret, "--results", filepath.Join(dir, "pull.db"), "-o", "json")
	checkPulled(ctx, t, w, ns, image)
	// Seen as a remote cluster, from its API alone: CRI-O nodes, and no CNI that says its name.
	if fp := summaryOf(t, "\n"+out, 1).Targets[0].Fingerprint; !strings.HasPrefix(fp["node_a_runtime"], "cri-o://") || fp["cni"] != "unknown" {
		t.Errorf("the CRI-O cluster seen remotely: node runtime %q, cni %q; want cri-o://... and unknown (bridge)", fp["node_a_runtime"], fp["cni"])
	}
}

// handlerWatch follows the runtime test's clusters while the run goes on. The suite's pods live
// per round, so each target's pods come and go: every client pod it sees is checked once, the
// most client pods seen at once are noted per cluster and RuntimeClass, and a cluster must never
// hold the client pods of two RuntimeClasses at once.
type handlerWatch struct {
	checked map[string]bool // pod UIDs
	most    map[string]int  // "cluster RuntimeClass": most client pods at once
	clients map[string]*kube.Client
}

func newHandlerWatch() *handlerWatch {
	return &handlerWatch{checked: map[string]bool{}, most: map[string]int{}, clients: map[string]*kube.Client{}}
}

// observe looks at both clusters once; a cluster not up yet is skipped.
func (w *handlerWatch) observe(ctx context.Context, t *testing.T) {
	for _, name := range []string{runtimeCluster, crioCluster} {
		c := w.clients[name]
		if c == nil {
			var err error
			if c, err = kube.Connect(cluster.DefaultLayout().Kubeconfig(name), ""); err != nil {
				continue
			}
			w.clients[name] = c
		}
		pods, err := c.CS.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: kube.LabelRole + "=" + kube.RoleClient})
		if err != nil {
			continue
		}
		now := map[string]int{}
		for _, p := range pods.Items {
			rc := ""
			if p.Spec.RuntimeClassName != nil {
				rc = *p.Spec.RuntimeClassName
			}
			now[name+" "+rc]++
			if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil || w.checked[string(p.UID)] {
				continue
			}
			if problem := checkPod(ctx, t, c, name, p, rc); problem != "" {
				// A pod removed while it was checked is no finding.
				if cur, err := c.CS.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{}); err == nil && cur.UID == p.UID && cur.DeletionTimestamp == nil {
					t.Error(problem)
				}
			}
			w.checked[string(p.UID)] = true
		}
		if len(now) > 1 {
			t.Errorf("cluster %s holds the client pods of several RuntimeClasses at once, pods per round: %v", name, now)
		}
		for k, n := range now {
			w.most[k] = max(w.most[k], n)
		}
	}
}

// checkPod finds a client pod's container in the state directory of the handler its
// RuntimeClass names, and in no other; a gVisor pod also sees gVisor's kernel. On the CRI-O
// cluster the containers are CRI-O's, run by runc. It returns the first problem found.
func checkPod(ctx context.Context, t *testing.T, c *kube.Client, name string, p corev1.Pod, rc string) string {
	cri, id := containerID(t, p)
	if want := map[string]string{runtimeCluster: "containerd", crioCluster: "cri-o"}[name]; cri != want {
		return fmt.Sprintf("pod %s/%s on %s: container of %s, want %s", p.Namespace, p.Name, name, cri, want)
	}
	for _, h := range lab.HandlersFor(map[string]string{runtimeCluster: lab.CRIContainerd, crioCluster: lab.CRICrio}[name]) {
		if got := handlerLists(ctx, t, name, p.Spec.NodeName, h, id); got != (h == rc) {
			return fmt.Sprintf("pod %s/%s (RuntimeClass %q): listed by %s: %v", p.Namespace, p.Name, rc, h, got)
		}
	}
	out, err := c.Exec(ctx, p.Namespace, p.Name, kube.ClientContainer, []string{"cat", "/proc/version"})
	if gvisor := strings.Contains(string(out), "gvisor"); err != nil || gvisor != (rc == lab.RuntimeRunsc) {
		return fmt.Sprintf("pod %s/%s (RuntimeClass %q): /proc/version %q, %v", p.Namespace, p.Name, rc, out, err)
	}
	return ""
}

// checkMost says whether every handler had both pairs' client pods up at some moment.
func (w *handlerWatch) checkMost(t *testing.T) {
	for _, h := range append(lab.RuntimeHandlers(), "crio") {
		key := runtimeCluster + " " + h
		if h == "crio" {
			key = crioCluster + " " + lab.RuntimeRunc
		}
		if w.most[key] != 2 {
			t.Errorf("at most %d client pods at once for %s, want 2 (two pairs): %v", w.most[key], key, w.most)
		}
	}
	if len(w.checked) == 0 {
		t.Error("no client pod was checked")
	}
}

// containerID splits a pod's first container ID into its CRI and the runtime's ID.
func containerID(t *testing.T, p corev1.Pod) (cri, id string) {
	t.Helper()
	if len(p.Status.ContainerStatuses) == 0 {
		t.Fatalf("pod %s/%s has no container status", p.Namespace, p.Name)
	}
	cri, id, _ = strings.Cut(p.Status.ContainerStatuses[0].ContainerID, "://")
	return cri, id
}

// handlerLists asks a handler's own state on a node whether it holds container id: the handler
// lists its root (containerd's shims add the namespace to it; CRI-O's runc uses it as is).
func handlerLists(ctx context.Context, t *testing.T, clusterName, node, handler, id string) bool {
	t.Helper()
	root := filepath.Join(cluster.DefaultLayout().Dir(clusterName), "nodes", node, handler)
	if clusterName == runtimeCluster {
		root = filepath.Join(root, "k8s.io")
	}
	bin := map[string]string{
		lab.RuntimeRunc: "runc", lab.RuntimeCrun: "crun",
		lab.RuntimeRunsc: binaries.Default().Path(binaries.RunscBinary), lab.RuntimeYouki: binaries.Default().Path(binaries.YoukiBinary),
	}[handler]
	out, _ := runCmd(ctx, bin, "--root", root, "list")
	return strings.Contains(out, id)
}

// checkRuntimeResults reads the run's JSON summary: every runtime measured every workload at
// both pair levels, with its OCI runtime in the fingerprint.
func checkRuntimeResults(t *testing.T, output string) {
	t.Helper()
	doc := summaryOf(t, output, 5)
	for _, tg := range doc.Targets {
		cri, h, _ := strings.Cut(tg.Name, ".")
		fp := tg.Fingerprint
		if fp["cri"] != cri {
			t.Errorf("target %s: fingerprint cri %q", tg.Name, fp["cri"])
		}
		if fp["runtime_handler"] != h || fp["oci_runtime"] != h || fp["oci_runtime_version"] == "" {
			t.Errorf("target %s: fingerprint runtime %q, OCI runtime %q version %q", tg.Name, fp["runtime_handler"], fp["oci_runtime"], fp["oci_runtime_version"])
		}
		if (fp["gvisor_platform"] != "") != (h == lab.RuntimeRunsc) {
			t.Errorf("target %s: gvisor_platform %q", tg.Name, fp["gvisor_platform"])
		}
	}
	measured, services := map[string]bool{}, map[string]int{}
	for _, r := range doc.Rows {
		if r.Metric == "service_ready_ms" && r.Mean >= 0 {
			services[r.Target] += r.N
		}
		switch r.Metric {
		case "latency_p50_us", "cpu_ops_per_s", "memory_read_mbps", "memory_write_mbps", "stream_copy_mbps", "stream_scale_mbps", "pod_ready_p50_ms":
			if r.Mean > 0 && (r.N == 2 || r.Path == "setup") {
				measured[fmt.Sprintf("%s %s %s x%d", r.Target, r.Metric, r.Workload, r.Pairs)] = true
			}
		}
	}
	// Five runtimes x (p50, cpu, memory read and write, STREAM copy and scale) x 2 pair levels,
	// plus pod startup.
	if len(measured) < 5*6*2 {
		t.Errorf("%d figures measured, want every runtime's latency, cpu, memory and STREAM at both pair levels: %v", len(measured), measured)
	}
	for _, tg := range doc.Targets {
		if !measured[tg.Name+" pod_ready_p50_ms pod-startup x1"] {
			t.Errorf("no pod startup figure for %s: %v", tg.Name, measured)
		}
		// With pods per round, every round times a new Service on its fresh pods, beside the
		// one timed before the rounds: an interval, not a single figure.
		if services[tg.Name] < 3 {
			t.Errorf("%s: %d Service programming figures, want one before the rounds and one a round (2)", tg.Name, services[tg.Name])
		}
	}
	// The study's figures are per container: STREAM's rate is one pod's already (the mean
	// over the pairs), and beside a figure of the pairs' sum stands the sum divided by them.
	mean := map[string]float64{}
	for _, r := range doc.Rows {
		if r.Target == "crio.runc" && r.Pairs == 2 {
			mean[r.Metric] = r.Mean
		}
	}
	rows := doc.Reference.Rows
	if len(rows) != 2 || !rows[0].Measured || !rows[1].Measured || rows[0].PerPair || !rows[1].PerPair {
		t.Fatalf("the study's figures beside the run's: %+v", doc.Reference)
	}
	if copyRate := mean["stream_copy_mbps"]; copyRate <= 0 || math.Abs(rows[0].Ours-copyRate) > 1e-6*copyRate {
		t.Errorf("STREAM copy per pod %.1f MB/s beside the study's: %+v", copyRate, rows[0])
	}
	if ops := mean["cpu_ops_per_s"]; ops <= 0 || math.Abs(rows[1].Ours-ops/2) > 1e-6*ops {
		t.Errorf("cpu ops/s %.1f over 2 pairs, per pair beside the study's: %+v", ops, rows[1])
	}
	// The kubelets see each pod's whole cgroup: a gVisor pod carries its sandbox (the Sentry
	// and the gofer), which a runc pod does not.
	mem := map[string]float64{}
	for _, r := range doc.Rows {
		if r.Metric == "pod_working_set_mib" {
			mem[r.Target] = r.Mean
		}
	}
	if runc, runsc := mem["containerd.runc"], mem["containerd.runsc"]; runc <= 0 || runsc < runc+5 {
		t.Errorf("pod working set: runc %.1f MiB, runsc %.1f MiB; want both, gVisor's at least 5 MiB more", runc, runsc)
	}
}
