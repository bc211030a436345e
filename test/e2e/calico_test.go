//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"net"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/internal/cluster/binaries"
	"github.com/cnibench/cnibench/internal/lab"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// calicoHostPaths are where calico-node and the calico CNI plugin put their files when they own
// a host; run per node namespace, they must create none of them.
func calicoHostPaths() map[string]bool {
	return existing([]string{"/var/lib/calico", "/var/run/calico", "/var/log/calico", "/etc/cni/net.d/10-calico.conflist",
		"/etc/cni/net.d/calico-kubeconfig", "/opt/cni/bin/calico", "/sys/fs/bpf/calico", "/sys/fs/bpf/tc", "/usr/lib/calico",
		"/run/calico/cgroup"})
}

// checkCalico proves on a Calico cluster (TestDatapaths creates it) that felix and the mode's
// forwarding really carry the pods: felix ready with its chains in the node namespaces only,
// the mode's devices and routes, calico's addresses, the common workload, and an enforced
// NetworkPolicy (felix's chains do).
func checkCalico(ctx context.Context, t *testing.T, dp, name string, host hostState) {
	spec := readSpec(t, name)
	w := newWorkload(ctx, t, name)

	t.Run("felix is ready in each node namespace and its chains stay there", func(t *testing.T) {
		for i := 1; i <= spec.Nodes; i++ {
			ready := exec.CommandContext(ctx, "ip", "netns", "exec", spec.NodeNetns(i), binaries.Default().Path(binaries.CalicoNodeBinary), "-felix-ready")
			if out, err := ready.CombinedOutput(); err != nil {
				t.Errorf("node%d: calico-node -felix-ready: %v: %s", i, err, out)
			}
			// The eBPF dataplane polices in its programs and keeps a few chains beside them.
			chain := map[bool]string{false: ":cali-FORWARD", true: ":cali-PREROUTING"}[dp == "calico-ebpf"]
			rules, err := runCmd(ctx, "ip", "netns", "exec", spec.NodeNetns(i), "iptables-nft-save")
			if err != nil || !strings.Contains(rules, chain) {
				t.Errorf("node%d has no %s chain (%v)", i, chain, err)
			}
		}
		if after, _ := runCmd(ctx, "iptables-nft-save"); strings.Contains(after, "cali-") && !strings.Contains(host.rootRules, "cali-") {
			t.Errorf("felix wrote chains in the root namespace:\n%s", after)
		}
	})
	t.Run("workload", func(t *testing.T) { w.run() })
	if t.Failed() {
		return
	}
	// After the workload, whose pods are on both nodes.
	t.Run("mode devices and routes", func(t *testing.T) { checkCalicoMode(ctx, t, dp, spec) })
	if dp == "calico-ebpf" {
		t.Run("felix's eBPF dataplane: programs on the nodes' devices, connect-time load balancing on the nodes' cgroups only, no kube-proxy", func(t *testing.T) {
			checkCalicoBPF(ctx, t, spec, cluster.DefaultLayout().Dir(name), host.rootPrograms)
		})
	}
	t.Run("pods are calico workloads with addresses from their node's subnet", func(t *testing.T) {
		pods, err := w.cs.CoreV1().Pods(w.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		nodes := map[string][]string{}
		for _, p := range pods.Items {
			n, err := w.cs.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			nodes[p.Spec.NodeName] = n.Spec.PodCIDRs
			if !cidrContains(t, n.Spec.PodCIDR, p.Status.PodIP) {
				t.Errorf("pod %s on %s has %s, outside %s", p.Name, p.Spec.NodeName, p.Status.PodIP, n.Spec.PodCIDR)
			}
			// The calico plugin records the address it assigned on the pod.
			if got := p.Annotations["cni.projectcalico.org/podIP"]; got != p.Status.PodIP+"/32" {
				t.Errorf("pod %s: calico's podIP annotation %q, want %s/32", p.Name, got, p.Status.PodIP)
			}
		}
		if dp != "canal" {
			// calico-ipam's blocks are carved from each node's own pool.
			blocks, err := runCmd(ctx, binaries.Default().KubectlPath(lab.DefaultKubernetesVersion), "--kubeconfig", w.kubeconfig,
				"get", "blockaffinities.crd.projectcalico.org", "-o", "jsonpath={range .items[*]}{.spec.node} {.spec.cidr}{\"\\n\"}{end}")
			if err != nil {
				t.Fatal(err)
			}
			// A dual-stack node has a pool, and blocks, of each family.
			for _, line := range strings.Split(strings.TrimSpace(blocks), "\n") {
				node, cidr, _ := strings.Cut(line, " ")
				pools := nodes[node]
				if len(pools) > 0 && !slices.ContainsFunc(pools, func(pool string) bool { return cidrContains(t, pool, strings.Split(cidr, "/")[0]) }) {
					t.Errorf("block %s of %s is outside its pools %v", cidr, node, pools)
				}
			}
			t.Logf("calico-ipam blocks:\n%s", blocks)
		}
	})
	t.Run("NetworkPolicy denies ingress to the selected pod only, in each of its families", func(t *testing.T) { w.networkPolicy(t) })
	checkDualStack(t, w, spec)
}

// checkCalicoMode checks who carries pods between nodes: Calico's own vxlan.calico device for
// calico-vxlan and calico-ebpf, flannel.1 (and no vxlan.calico) for canal.
func checkCalicoMode(ctx context.Context, t *testing.T, dp string, spec cluster.Spec) {
	links, _ := runCmd(ctx, "ip", "-n", spec.NodeNetns(1), "-o", "link", "show")
	routes, _ := runCmd(ctx, "ip", "-n", spec.NodeNetns(1), "route", "show")
	calicoVXLAN, flannel := strings.Contains(links, "vxlan.calico"), strings.Contains(links, "flannel.1")
	switch dp {
	case "calico-vxlan", "calico-ebpf":
		if !calicoVXLAN || flannel {
			t.Errorf("%s: node1 links (want vxlan.calico, no flannel.1):\n%s", dp, links)
		}
		if !strings.Contains(routes, "dev vxlan.calico") {
			t.Errorf("node1 has no route through vxlan.calico:\n%s", routes)
		}
	case "canal":
		if calicoVXLAN || !flannel {
			t.Errorf("canal: node1 links (want flannel.1, no vxlan.calico):\n%s", links)
		}
		if !strings.Contains(routes, "dev flannel.1") {
			t.Errorf("node1 has no route through flannel.1:\n%s", routes)
		}
	}
	if !strings.Contains(routes, "dev cali") {
		t.Errorf("node1 has no route to a pod through a cali veth:\n%s", routes)
	}
	// IPv6 crosses nodes on a tunnel device of its own, between the nodes' IPv6 addresses.
	if want := map[string]string{"calico-vxlan": "vxlan-v6.calico", "canal": "flannel-v6.1"}[dp]; spec.IPFamily == lab.DualStack && !strings.Contains(links, want) {
		t.Errorf("%s dual-stack: no %s in node1:\n%s", dp, want, links)
	}
}

func cidrContains(t *testing.T, cidr, ip string) bool {
	t.Helper()
	_, n, err := net.ParseCIDR(cidr)
	if err != nil {
		t.Fatalf("bad CIDR %q: %v", cidr, err)
	}
	return n.Contains(parseIP(t, ip))
}

// checkCalicoBPF checks what only calico-ebpf has: felix's tc programs on each node's uplink,
// its VXLAN device and its pods' veths, inside the node's namespace, and its connect-time load
// balancing in place of kube-proxy, confined to each node's cgroup (checkNodeSocketLB).
func checkCalicoBPF(ctx context.Context, t *testing.T, spec cluster.Spec, stateDir string, rootBefore []ebpf.ProgramID) {
	for i := 1; i <= spec.Nodes; i++ {
		out, err := runCmd(ctx, "ip", "netns", "exec", spec.NodeNetns(i), "bpftool", "-j", "net", "show")
		if err != nil {
			t.Fatalf("node%d: bpftool net show: %v", i, err)
		}
		var nets []struct {
			TC []struct{ Devname, Kind, Name string } `json:"tc"`
		}
		if err := json.Unmarshal([]byte(out), &nets); err != nil || len(nets) != 1 {
			t.Fatalf("node%d: bpftool net show: %v\n%s", i, err, out)
		}
		attached := map[string]bool{}
		for _, p := range nets[0].TC {
			if strings.HasPrefix(p.Name, "cali_") {
				attached[calicoDeviceKind(p.Devname)+" "+p.Kind] = true
			}
		}
		for _, want := range []string{"uplink clsact/ingress", "uplink clsact/egress", "vxlan clsact/ingress", "pod clsact/ingress", "pod clsact/egress"} {
			if !attached[want] {
				t.Errorf("node%d: no calico program on %s; bpftool net show:\n%s", i, want, out)
			}
		}
	}
	checkNodeSocketLB(ctx, t, spec, stateDir, rootBefore)
}

// calicoDeviceKind names a node device by its role: the uplink, Calico's VXLAN device, a pod's
// veth, or other.
func calicoDeviceKind(dev string) string {
	switch {
	case dev == "eth0":
		return "uplink"
	case dev == "vxlan.calico":
		return "vxlan"
	case strings.HasPrefix(dev, "cali"):
		return "pod"
	}
	return "other"
}
