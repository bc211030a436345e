//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/cluster/binaries"
	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/lab"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The clusters of TestMultus: flannel and Cilium under Multus, and flannel alone (a cluster
// without Multus for the remote preflight's refusals).
const (
	multusCluster       = "cnbmu-fl"
	multusCiliumCluster = "cnbmu-ci"
	plainCluster        = "cnbmu-fp"
)

// multusSuite measures flannel and Cilium as the primary network under Multus, as the first
// reference study ran them, and the secondary network of each, interleaved in one run.
const multusSuite = `
targets:
  - name: flannel-multus
    local: {cluster: cnbmu-fl, datapath: flannel-vxlan, multus: true}
  - name: cilium-multus
    local: {cluster: cnbmu-ci, datapath: cilium-vxlan, multus: true}
paths: [same-node, cross-node, secondary]
workloads:
  - {kind: tcp-stream, streams: 1}
  - {kind: tcp-rr, size: 64}
repetitions: 3
duration: 2s
warmup: off
`

// TestMultus is the acceptance test of Multus on a local cluster: Multus refused where it cannot
// delegate; a flannel cluster under Multus whose pods get flannel's eth0 and a macvlan net1 in
// their node's own range, the secondary traffic proved by counters to cross net1 and the
// underlay, not flannel's vxlan device; one run over the cluster network and the secondary path
// of flannel and of Cilium under Multus; the secondary paths over a network of the user's with
// the cluster reached as a remote one, and each refusal of its preflight (the cluster without
// Multus is flannel's alone); and the host as it was after the deletes.
func TestMultus(t *testing.T) {
	before := snapshot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	out, err := cli(ctx, "cluster", "create", "--name", multusCluster, "--datapath", "bridge", "--multus")
	if want := "--multus true: Multus delegates here to cilium-vxlan, flannel-host-gw, flannel-vxlan only, not to datapath bridge"; err == nil || !strings.Contains(out, want) {
		t.Errorf("multus on bridge: %v, want %q in:\n%s", err, want, out)
	}
	for _, name := range []string{multusCluster, multusCiliumCluster, plainCluster} {
		defer forceDelete(name)
	}
	createClusters(ctx, t, []string{"--name", multusCluster, "--datapath", "flannel-vxlan", "--multus"},
		[]string{"--name", multusCiliumCluster, "--datapath", "cilium-vxlan", "--multus", "--wait", "6m"},
		[]string{"--name", plainCluster, "--datapath", "flannel-vxlan"})
	t.Run("pods get a macvlan net1 whose traffic crosses the underlay", func(t *testing.T) { checkSecondary(ctx, t) })

	dir := t.TempDir()
	doc := runSuiteOn(ctx, t, multusSuite, filepath.Join(dir, "multus.yaml"), filepath.Join(dir, "multus.db"))
	if len(doc.Targets) != 2 {
		t.Fatalf("%d targets, want 2", len(doc.Targets))
	}
	for _, tg := range doc.Targets {
		if fp := tg.Fingerprint["multus"]; !strings.Contains(fp, binaries.MultusVersion) {
			t.Errorf("%s: fingerprint multus %q, want Multus %s", tg.Name, fp, binaries.MultusVersion)
		}
	}
	got := logRows(t, doc.Rows)
	for _, target := range []string{"flannel-multus", "cilium-multus"} {
		for _, path := range []string{"same-node", "cross-node", "secondary"} {
			for _, m := range []string{"tcp-stream/1 throughput_gbps", "tcp-rr/64B latency_p50_us"} {
				if r, ok := got[target+" "+path+" "+m]; !ok || r.N != 3 || r.Mean <= 0 {
					t.Errorf("%s %s %s: %+v (present %v), want 3 positive samples", target, path, m, r, ok)
				}
			}
		}
	}
	t.Run("a user's NetworkAttachmentDefinition on the cluster reached as a remote one", func(t *testing.T) { testRemoteSecondary(ctx, t) })

	for _, name := range []string{multusCluster, multusCiliumCluster, plainCluster} {
		deleteCluster(ctx, t, name)
	}
	assertClean(t, before)
}

// logRows logs the figures of the paths and the setup, with their 95 % intervals, and returns
// them by "target path workload metric".
func logRows(t *testing.T, rows []jsonRow) map[string]jsonRow {
	t.Helper()
	got := map[string]jsonRow{}
	for _, r := range rows {
		switch r.Metric {
		case "throughput_gbps", "latency_p50_us", "transactions_per_s", "pod_ready_p50_ms", "pod_running_p50_ms":
			t.Logf("%-15s %-11s %-13s %-20s n=%d mean %.3f [%.3f, %.3f]", r.Target, r.Path, r.Workload, r.Metric, r.N, r.Mean, r.Low, r.High)
		}
		got[r.Target+" "+r.Path+" "+r.Workload+" "+r.Metric] = r
	}
	return got
}

// checkSecondary deploys a client and a server on node1 and a server on node2, all asking for
// the secondary network, and checks each pod's interfaces, then moves data to each server's
// net1 address and reads the counters on the way.
func checkSecondary(ctx context.Context, t *testing.T) {
	w := newWorkload(ctx, t, multusCluster)
	w.ns = "cnbmu-check"
	if _, err := w.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.cs.CoreV1().Namespaces().Delete(context.Background(), w.ns, metav1.DeleteOptions{}) }()
	spec := readSpec(t, multusCluster)
	plan := spec.Plan()
	pods := map[string]int{"client": 1, "near": 1, "far": 2}
	for name, node := range pods {
		argv := []string{"iperf3", "-s"}
		if name == "client" {
			argv = []string{"sleep", "infinity"}
		}
		w.secondaryPod(name, spec.NodeName(node), argv)
	}
	addr := map[string]string{}
	for name, node := range pods {
		p := w.waitRunning(name)
		var eth0, net1 kube.NetworkStatus
		for _, st := range kube.NetworkStatuses(p) {
			switch {
			case st.Default:
				eth0 = st
			case st.Name == lab.SecondaryNetwork:
				net1 = st
			}
		}
		// flannel's subnets are the controller-manager's, inside the cluster network.
		if eth0.Interface != "eth0" || len(eth0.IPs) == 0 || !plan.ClusterCIDR().Contains(net.ParseIP(eth0.IPs[0])) {
			t.Errorf("%s: cluster network %+v, want eth0 in flannel's %s", name, eth0, plan.ClusterCIDR())
		}
		if net1.Interface != "net1" || len(net1.IPs) == 0 || !plan.SecondaryCIDR(node).Contains(net.ParseIP(net1.IPs[0])) {
			t.Fatalf("%s: secondary network %+v, want net1 in its node's %s; annotation %s", name, net1, plan.SecondaryCIDR(node), p.Annotations[kube.AnnotationNetworkStatus])
		}
		if out := w.exec(t, name, "ip", "-o", "-4", "addr", "show", "dev", "net1"); !strings.Contains(out, net1.IPs[0]+"/") {
			t.Errorf("%s: net1 in the pod lacks %s:\n%s", name, net1.IPs[0], out)
		}
		addr[name] = net1.IPs[0]
	}
	node1 := spec.NodeNetns(1)
	for _, c := range []struct {
		server string
		// quiet is the node1 device the traffic must not take: flannel's vxlan device across
		// nodes, the node's uplink within one (macvlan's bridge mode switches it inside).
		quiet string
	}{{"far", "flannel.1"}, {"near", "eth0"}} {
		rx := func() int64 { return w.counter(t, c.server, "/sys/class/net/net1/statistics/rx_bytes") }
		quiet := func() int64 { return netnsCounter(ctx, t, node1, c.quiet) }
		rx0, q0 := rx(), quiet()
		sent := w.iperfBytes(t, "client", addr[c.server])
		rx1, q1 := rx(), quiet()
		t.Logf("client -> %s (%s): %.1f MB; %s net1 received %.1f MB, node1 %s sent %.1f MB",
			c.server, addr[c.server], float64(sent)/1e6, c.server, float64(rx1-rx0)/1e6, c.quiet, float64(q1-q0)/1e6)
		if rx1-rx0 < sent {
			t.Errorf("%s's net1 received %d bytes, less than the %d iperf3 moved to it", c.server, rx1-rx0, sent)
		}
		if q1-q0 > sent/20 {
			t.Errorf("node1's %s sent %d bytes while iperf3 moved %d over net1: the traffic did not take the macvlan", c.quiet, q1-q0, sent)
		}
	}
}

// secondaryPod creates a pod of the tools image pinned to a node that asks for the secondary
// network.
func (w *workload) secondaryPod(name, node string, command []string) {
	grace := int64(1)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.ns, Annotations: map[string]string{kube.AnnotationNetworks: lab.SecondaryNetwork}},
		Spec: corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{Name: "main", Image: w.image, ImagePullPolicy: corev1.PullNever, Command: command}}},
	}
	if _, err := w.cs.CoreV1().Pods(w.ns).Create(w.ctx, p, metav1.CreateOptions{}); err != nil {
		w.t.Fatalf("create pod %s: %v", name, err)
	}
}

// counter reads a counter file in a pod.
func (w *workload) counter(t *testing.T, pod, file string) int64 {
	t.Helper()
	out := strings.TrimSpace(w.exec(t, pod, "cat", file))
	n, err := strconv.ParseInt(out, 10, 64)
	if err != nil {
		t.Fatalf("%s in %s: %q", file, pod, out)
	}
	return n
}

// netnsCounter reads a device's transmitted bytes in a node's namespace.
func netnsCounter(ctx context.Context, t *testing.T, netns, dev string) int64 {
	t.Helper()
	out, err := runCmd(ctx, "ip", "netns", "exec", netns, "cat", "/sys/class/net/"+dev+"/statistics/tx_bytes")
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
	if err != nil {
		t.Fatalf("tx_bytes of %s in %s: %q", dev, netns, out)
	}
	return n
}

// iperfBytes runs a two-second iperf3 TCP test from a pod and returns the bytes received.
func (w *workload) iperfBytes(t *testing.T, client, target string) int64 {
	t.Helper()
	out := w.exec(t, client, "iperf3", "-c", target, "-t", "2", "-J")
	var res struct {
		End struct {
			SumReceived struct {
				Bytes float64 `json:"bytes"`
			} `json:"sum_received"`
		} `json:"end"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.End.SumReceived.Bytes <= 0 {
		t.Fatalf("iperf3 from %s to %s: %v\n%s", client, target, err, out)
	}
	return int64(res.End.SumReceived.Bytes)
}
