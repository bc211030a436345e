//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/internal/cluster/binaries"
	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/lab"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

const lifecycleCluster = "cnbe2e"

// TestClusterLifecycle is the acceptance test of the local cluster: create two nodes, exercise
// pod networking, Services, DNS, exec and the crun runtime handler, delete, and compare the host.
func TestClusterLifecycle(t *testing.T) {
	before := snapshot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	defer forceDelete(lifecycleCluster)

	createCluster(ctx, t, "--name", lifecycleCluster, "--nodes", "2")

	spec := readSpec(t, lifecycleCluster)

	t.Run("refuses a second cluster of the same name", func(t *testing.T) {
		out, err := cli(ctx, "cluster", "create", "--name", lifecycleCluster)
		if err == nil || !strings.Contains(out, "a cluster of that name exists") {
			t.Errorf("second create: err=%v, output:\n%s", err, out)
		}
	})
	t.Run("list shows it healthy", func(t *testing.T) {
		out, err := cli(ctx, "cluster", "list", "-o", "json")
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		var infos []cluster.Info
		if err := json.Unmarshal([]byte(out), &infos); err != nil {
			t.Fatalf("list -o json: %v\n%s", err, out)
		}
		found := false
		for _, i := range infos {
			if i.Name == lifecycleCluster {
				found = true
				if !strings.HasPrefix(i.Health, "healthy: 2/2") {
					t.Errorf("health = %q", i.Health)
				}
			}
		}
		if !found {
			t.Errorf("cluster missing from list: %s", out)
		}
	})
	t.Run("workload", func(t *testing.T) { newWorkload(ctx, t, lifecycleCluster).run() })
	t.Run("Pod Security baseline enforced unless a namespace is labelled", func(t *testing.T) {
		checkPodSecurityEnforced(ctx, t, newWorkload(ctx, t, lifecycleCluster))
	})
	// Root's inotify instances (128 by default) decide how many clusters run at once: five
	// datapaths side by side need each cluster within 24.
	t.Run("inotify instances within budget", func(t *testing.T) {
		if n := clusterInotify(t, lifecycleCluster); n > 24 {
			t.Errorf("the cluster holds %d inotify instances, over 24 (five would not fit in 128)", n)
		} else {
			t.Logf("the cluster holds %d inotify instances", n)
		}
	})

	t.Run("runs the default Kubernetes release", func(t *testing.T) {
		assertRelease(t, newWorkload(ctx, t, lifecycleCluster), lab.DefaultKubernetesVersion)
	})
	t.Run("node image stores in memory", func(t *testing.T) { assertRuntimeStorage(t, lifecycleCluster, "tmpfs") })

	// A second cluster alongside the first, with the other kube-proxy mode and the oldest
	// Kubernetes release: clusters must get disjoint ranges and work at the same time (datapath
	// comparisons run them side by side), and older releases stay selectable.
	oldest := lab.KubernetesVersions()[len(lab.KubernetesVersions())-1]
	t.Run("second cluster at once, kube-proxy iptables, Kubernetes "+oldest, func(t *testing.T) {
		const second = "cnbe2eb"
		defer forceDelete(second)
		if out, err := cli(ctx, "cluster", "create", "--name", second, "--proxy-mode", "iptables", "--kubernetes-version", oldest, "--runtime-on-disk"); err != nil {
			t.Fatalf("create: %v\n%s", err, out)
		}
		assertRuntimeStorage(t, second, "disk")
		if a, b := spec.Plan().Block(), readSpec(t, second).Plan().Block(); a.String() == b.String() {
			t.Fatalf("both clusters got %s", a)
		}
		w := newWorkload(ctx, t, second)
		assertRelease(t, w, oldest)
		w.run()
		if out, err := cli(ctx, "cluster", "delete", "--name", second); err != nil {
			t.Fatalf("delete: %v\n%s", err, out)
		}
	})

	deleteCluster(ctx, t, lifecycleCluster)
	assertClean(t, before)
}

func readSpec(t *testing.T, name string) cluster.Spec {
	t.Helper()
	spec, err := cluster.DefaultLayout().ReadSpec(name)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// newWorkload connects to a cluster with its admin kubeconfig.
func newWorkload(ctx context.Context, t *testing.T, name string) *workload {
	t.Helper()
	kubeconfig := cluster.DefaultLayout().Kubeconfig(name)
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	spec := readSpec(t, name)
	return &workload{t: t, ctx: ctx, cs: cs, ns: "e2e", image: spec.Images.Tools,
		kubeconfig: kubeconfig, cluster: name, kubectl: binaries.Default().KubectlPath(spec.Kubernetes)}
}

// assertRelease checks that the API server and every kubelet run the given release.
func assertRelease(t *testing.T, w *workload, version string) {
	t.Helper()
	v, err := w.cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.GitVersion != version {
		t.Errorf("API server %s, want %s", v.GitVersion, version)
	}
	nodes, err := w.cs.CoreV1().Nodes().List(w.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		if got := n.Status.NodeInfo.KubeletVersion; got != version {
			t.Errorf("node %s: kubelet %s, want %s", n.Name, got, version)
		}
	}
}

// workload exercises a running cluster through its API server and the real kubectl.
type workload struct {
	t          *testing.T
	ctx        context.Context
	cs         kubernetes.Interface
	ns         string
	image      string
	kubeconfig string
	cluster    string
	kubectl    string // of the cluster's Kubernetes release
}

func (w *workload) run() {
	t := w.t
	if _, err := w.cs.CoreV1().Namespaces().Create(w.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	server := w.pod("server", "node2", "", []string{"iperf3", "-s"})
	client1 := w.pod("client1", "node1", "", []string{"sleep", "infinity"})
	client2 := w.pod("client2", "node2", "", []string{"sleep", "infinity"})
	crunPod := w.pod("crun", "node1", "crun", []string{"sleep", "infinity"})
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "iperf", Namespace: w.ns},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "server"},
			Ports:    []corev1.ServicePort{{Port: 5201, TargetPort: intstr.FromInt32(5201)}},
		},
	}
	svc, err := w.cs.CoreV1().Services(w.ns).Create(w.ctx, svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods := map[string]*corev1.Pod{}
	for _, name := range []string{server, client1, client2, crunPod} {
		pods[name] = w.waitRunning(name)
	}
	if pods[client1].Spec.NodeName == pods[server].Spec.NodeName {
		t.Fatalf("client1 and server share node %s", pods[server].Spec.NodeName)
	}

	t.Run("kubectl exec", func(t *testing.T) {
		if out := w.exec(t, client1, "echo", "exec-ok"); strings.TrimSpace(out) != "exec-ok" {
			t.Errorf("exec output %q", out)
		}
	})
	t.Run("cross-node pod-to-pod TCP", func(t *testing.T) {
		w.iperf(t, client1, pods[server].Status.PodIP)
	})
	t.Run("ClusterIP Service from both nodes", func(t *testing.T) {
		w.iperf(t, client1, svc.Spec.ClusterIP)
		w.iperf(t, client2, svc.Spec.ClusterIP)
	})
	t.Run("Service name resolves through CoreDNS", func(t *testing.T) {
		out := w.exec(t, client1, "getent", "hosts", "iperf."+w.ns+".svc.cluster.local")
		if !strings.HasPrefix(strings.TrimSpace(out), svc.Spec.ClusterIP+" ") {
			t.Errorf("getent hosts: %q, want %s", out, svc.Spec.ClusterIP)
		}
	})
	t.Run("crun runtime handler runs the pod", func(t *testing.T) {
		if out := w.exec(t, crunPod, "echo", "crun-ok"); strings.TrimSpace(out) != "crun-ok" {
			t.Errorf("exec in crun pod: %q", out)
		}
		// The crun wrapper keeps its state under the node's crun root: the pod must be listed there,
		// and not under runc's.
		nodeDir := filepath.Join(cluster.DefaultLayout().Dir(w.cluster), "nodes", "node1")
		id := strings.TrimPrefix(pods[crunPod].Status.ContainerStatuses[0].ContainerID, "containerd://")
		out, err := exec.Command("crun", "--root", filepath.Join(nodeDir, "crun", "k8s.io"), "list").CombinedOutput()
		if err != nil || !strings.Contains(string(out), id) {
			t.Errorf("crun list does not show container %s: %v\n%s", id, err, out)
		}
		if _, err := os.Stat(filepath.Join(nodeDir, "runc", "k8s.io", id)); err == nil {
			t.Errorf("container %s ran under runc", id)
		}
	})
}

// pod creates a pod pinned to a node and returns its name.
func (w *workload) pod(name, node, runtimeClass string, command []string) string {
	grace := int64(1)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.ns, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{
				Name: "main", Image: w.image, ImagePullPolicy: corev1.PullNever, Command: command,
			}},
		},
	}
	if runtimeClass != "" {
		p.Spec.RuntimeClassName = &runtimeClass
	}
	if _, err := w.cs.CoreV1().Pods(w.ns).Create(w.ctx, p, metav1.CreateOptions{}); err != nil {
		w.t.Fatalf("create pod %s: %v", name, err)
	}
	return name
}

func (w *workload) waitRunning(name string) *corev1.Pod {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		p, err := w.cs.CoreV1().Pods(w.ns).Get(w.ctx, name, metav1.GetOptions{})
		if err == nil && p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" {
			return p
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("pod %s not running: %v %+v", name, err, p.Status)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// exec runs a command in a pod with the real kubectl.
func (w *workload) exec(t *testing.T, pod string, args ...string) string {
	t.Helper()
	kubectl := w.kubectl
	full := append([]string{"--kubeconfig", w.kubeconfig, "-n", w.ns, "exec", pod, "--"}, args...)
	ctx, cancel := context.WithTimeout(w.ctx, time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, kubectl, full...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(full, " "), err, out)
	}
	return string(out)
}

// iperf runs a one-second iperf3 TCP test from a pod and checks that bytes arrived.
func (w *workload) iperf(t *testing.T, client, target string) {
	t.Helper()
	out := w.exec(t, client, "iperf3", "-c", target, "-t", "1", "-J")
	var res struct {
		End struct {
			SumReceived struct {
				Bytes float64 `json:"bytes"`
			} `json:"sum_received"`
		} `json:"end"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("iperf3 output from %s to %s: %v\n%s", client, target, err, out)
	}
	if res.End.SumReceived.Bytes <= 0 {
		t.Errorf("iperf3 from %s to %s received no bytes:\n%s", client, target, out)
	}
	t.Logf("%s -> %s: %.1f MB in 1 s", client, target, res.End.SumReceived.Bytes/1e6)
}

// clusterInotify counts the inotify instances held by the processes in a cluster's cgroup.
func clusterInotify(t *testing.T, name string) int {
	t.Helper()
	procs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range procs {
		cg, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cgroup"))
		if err != nil || !strings.Contains(string(cg), "/cnb-"+name+"/") {
			continue
		}
		fds, _ := os.ReadDir(filepath.Join("/proc", p.Name(), "fd"))
		for _, fd := range fds {
			if target, _ := os.Readlink(filepath.Join("/proc", p.Name(), "fd", fd.Name())); target == "anon_inode:inotify" {
				n++
			}
		}
	}
	return n
}

// assertRuntimeStorage checks where each node's containerd keeps its images: "tmpfs" (a tmpfs
// mounted on its root directory, the default) or "disk" (no mount there, --runtime-on-disk).
func assertRuntimeStorage(t *testing.T, name, want string) {
	t.Helper()
	mounts := takeHost(t).Mounts
	for i := 1; i <= 2; i++ {
		root := filepath.Join(cluster.DefaultLayout().Dir(name), "nodes", fmt.Sprintf("node%d", i), "containerd", "root")
		got := "disk"
		if slices.Contains(mounts, "mount "+root+" tmpfs") {
			got = "tmpfs"
		}
		if got != want {
			t.Errorf("%s: containerd's root is on %s, want %s", root, got, want)
		}
	}
}

// checkPodSecurityEnforced asks the API server, by dry runs, to admit a host-network pod: a
// namespace without labels refuses it (baseline is every namespace's default, as platform
// teams set it), one labelled privileged (as a run labels its own for host-network paths)
// admits it.
func checkPodSecurityEnforced(ctx context.Context, t *testing.T, w *workload) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "cnb-psa"}, Spec: corev1.PodSpec{HostNetwork: true,
		Containers: []corev1.Container{{Name: "c", Image: w.image, Command: []string{"sleep", "infinity"}}}}}
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	_, err := w.cs.CoreV1().Pods("default").Create(ctx, pod, dry)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "baseline") {
		t.Errorf("a host-network pod in namespace default: %v, want refused by Pod Security baseline", err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cnb-psa-privileged", Labels: map[string]string{kube.LabelPodSecurityEnforce: kube.PodSecurityPrivileged}}}
	if _, err := w.cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) }()
	if _, err := w.cs.CoreV1().Pods(ns.Name).Create(ctx, pod, dry); err != nil {
		t.Errorf("a host-network pod in a namespace labelled privileged: %v", err)
	}
}
