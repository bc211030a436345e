//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/cluster"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// flannelHostPaths are where flanneld and the flannel CNI plugin put their files by default;
// run per node with explicit paths, they must create none of them.
func flannelHostPaths() []string {
	return []string{"/run/flannel", "/var/lib/cni/flannel", "/etc/kube-flannel", "/etc/cni/net.d/10-flannel.conflist"}
}

// checkFlannel proves on a flannel cluster (TestDatapaths creates it) that flanneld really
// carries the pods: its leases, the backend's device or routes, pod addresses from the subnets
// it published, the common workload through them, and nothing of flannel in the root namespace.
func checkFlannel(ctx context.Context, t *testing.T, backend, name string, host hostState) {
	spec := readSpec(t, name)
	w := newWorkload(ctx, t, name)
	nodes, err := w.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 2 {
		t.Fatalf("%d nodes", len(nodes.Items))
	}
	podCIDR := map[string]*net.IPNet{}
	for _, n := range nodes.Items {
		_, cidr, err := net.ParseCIDR(n.Spec.PodCIDR)
		if err != nil {
			t.Fatalf("node %s pod CIDR %q: %v", n.Name, n.Spec.PodCIDR, err)
		}
		podCIDR[n.Name] = cidr
	}

	t.Run("flanneld runs in each node namespace and holds the node's lease", func(t *testing.T) {
		for i := 1; i <= spec.Nodes; i++ {
			node := spec.NodeName(i)
			checkFlanneldProcess(t, name, spec.NodeNetns(i), node)
			var n corev1.Node
			for _, item := range nodes.Items {
				if item.Name == node {
					n = item
				}
			}
			if got := n.Annotations["flannel.alpha.coreos.com/backend-type"]; got != backend {
				t.Errorf("%s backend-type annotation %q, want %q", node, got, backend)
			}
			if got := n.Annotations["flannel.alpha.coreos.com/public-ip"]; got != spec.Plan().NodeIP(i).String() {
				t.Errorf("%s public-ip annotation %q, want its underlay address %s", node, got, spec.Plan().NodeIP(i))
			}
			env, err := os.ReadFile(filepath.Join(cluster.DefaultLayout().Dir(name), "nodes", node, "cni", "flannel", "subnet.env"))
			if err != nil {
				t.Fatal(err)
			}
			if want := "FLANNEL_SUBNET=" + firstHostCIDR(podCIDR[node]); !strings.Contains(string(env), want) {
				t.Errorf("%s subnet.env lacks %s:\n%s", node, want, env)
			}
		}
	})
	t.Run("the root namespace and host paths are untouched", func(t *testing.T) {
		if out, err := runCmd(ctx, "ip", "-o", "link", "show"); err != nil || strings.Contains(out, "flannel") {
			t.Errorf("root namespace links (%v):\n%s", err, out)
		}
		for _, p := range flannelHostPaths() {
			if _, err := os.Lstat(p); err == nil && !host.flannelPaths[p] {
				t.Errorf("%s exists on the host", p)
			}
		}
	})

	peerRoute := func(i, peer int) flannelRoute {
		return routeExact(ctx, t, spec.NodeNetns(i), podCIDR[spec.NodeName(peer)].String())
	}
	var txBefore uint64
	switch backend {
	case "vxlan":
		t.Run("vxlan device and routes", func(t *testing.T) {
			for i, peer := 1, 2; i <= 2; i, peer = i+1, peer-1 {
				l := flannelLink(ctx, t, spec.NodeNetns(i), "flannel.1")
				if l.LinkInfo.Kind != "vxlan" || l.LinkInfo.Data.ID != 1 {
					t.Errorf("node%d flannel.1 is %q id %d, want vxlan id 1", i, l.LinkInfo.Kind, l.LinkInfo.Data.ID)
				}
				if r := peerRoute(i, peer); r.Dev != "flannel.1" {
					t.Errorf("node%d reaches node%d's pods through %+v, want flannel.1", i, peer, r)
				}
			}
		})
		txBefore = flannelLink(ctx, t, spec.NodeNetns(1), "flannel.1").Stats.TX.Bytes
	case "host-gw":
		t.Run("routes over the underlay", func(t *testing.T) {
			for i, peer := 1, 2; i <= 2; i, peer = i+1, peer-1 {
				if out, _ := runCmd(ctx, "ip", "-n", spec.NodeNetns(i), "-o", "link", "show"); strings.Contains(out, "flannel.1") {
					t.Errorf("host-gw, yet node%d has flannel.1:\n%s", i, out)
				}
				r := peerRoute(i, peer)
				if r.Gateway != spec.Plan().NodeIP(peer).String() || r.Dev != "eth0" {
					t.Errorf("node%d reaches node%d's pods through %+v, want via %s dev eth0", i, peer, r, spec.Plan().NodeIP(peer))
				}
			}
		})
	}

	t.Run("workload", func(t *testing.T) { w.run() })
	if t.Failed() {
		return
	}
	if backend == "vxlan" {
		// client1 (node1) sent its iperf3 streams to the server on node2, directly and
		// through the Service: that traffic must have left node1 encapsulated.
		sent := flannelLink(ctx, t, spec.NodeNetns(1), "flannel.1").Stats.TX.Bytes - txBefore
		t.Logf("node1 flannel.1 sent %.1f MB during the workload", float64(sent)/1e6)
		if sent < 10e6 {
			t.Errorf("node1 flannel.1 sent only %d bytes during the workload's cross-node iperf3", sent)
		}
	}
	t.Run("pods have addresses from their node's flannel subnet", func(t *testing.T) {
		pods, err := w.cs.CoreV1().Pods(w.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if cidr := podCIDR[p.Spec.NodeName]; cidr == nil || !cidr.Contains(net.ParseIP(p.Status.PodIP)) {
				t.Errorf("pod %s on %s has %s, outside %v", p.Name, p.Spec.NodeName, p.Status.PodIP, cidr)
			}
		}
		// The plugin's records and host-local's allocations are where the conflist puts them.
		for i := 1; i <= spec.Nodes; i++ {
			cni := filepath.Join(cluster.DefaultLayout().Dir(name), "nodes", spec.NodeName(i), "cni")
			for _, dir := range []string{filepath.Join(cni, "flannel", "delegates"), filepath.Join(cni, "ipam", "cnb-flannel-"+spec.NodeName(i))} {
				if entries, err := os.ReadDir(dir); err != nil || len(entries) == 0 {
					t.Errorf("node%d: nothing in %s (%v)", i, dir, err)
				}
			}
		}
	})

}

// checkFlanneldProcess checks that the node's flanneld (its pid file names it) is flanneld
// itself, not its start-up wrapper, and lives in the node's network namespace.
func checkFlanneldProcess(t *testing.T, clusterName, netns, node string) {
	t.Helper()
	pid := daemonPid(t, clusterName, node+"-flanneld")
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil || strings.TrimSpace(string(comm)) != "flanneld" {
		t.Errorf("%s: pid %d is %q (%v), want flanneld", node, pid, comm, err)
	}
	var procNS, nodeNS os.FileInfo
	if procNS, err = os.Stat(fmt.Sprintf("/proc/%d/ns/net", pid)); err != nil {
		t.Fatal(err)
	}
	if nodeNS, err = os.Stat("/run/netns/" + netns); err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(procNS, nodeNS) {
		t.Errorf("%s: flanneld (pid %d) is not in namespace %s", node, pid, netns)
	}
}

// firstHostCIDR is the first address of a subnet with its prefix, as flanneld writes
// FLANNEL_SUBNET (the bridge's address).
func firstHostCIDR(n *net.IPNet) string {
	ip := make(net.IP, len(n.IP.To4()))
	copy(ip, n.IP.To4())
	ip[3]++
	ones, _ := n.Mask.Size()
	return fmt.Sprintf("%s/%d", ip, ones)
}

// flannelIPLink is the part of `ip -j -d -s link show` the checks read.
type flannelIPLink struct {
	LinkInfo struct {
		Kind string `json:"info_kind"`
		Data struct {
			ID int `json:"id"`
		} `json:"info_data"`
	} `json:"linkinfo"`
	Stats struct {
		TX struct {
			Bytes uint64 `json:"bytes"`
		} `json:"tx"`
	} `json:"stats64"`
}

func flannelLink(ctx context.Context, t *testing.T, netns, dev string) flannelIPLink {
	t.Helper()
	out, err := runCmd(ctx, "ip", "-n", netns, "-j", "-d", "-s", "link", "show", "dev", dev)
	if err != nil {
		t.Fatalf("no %s in %s: %v", dev, netns, err)
	}
	var links []flannelIPLink
	if err := json.Unmarshal([]byte(out), &links); err != nil || len(links) != 1 {
		t.Fatalf("ip link show %s in %s: %v\n%s", dev, netns, err, out)
	}
	return links[0]
}

// flannelRoute is one route of `ip -j route show`.
type flannelRoute struct {
	Dst     string `json:"dst"`
	Gateway string `json:"gateway"`
	Dev     string `json:"dev"`
}

// routeExact returns the route for exactly dst in a namespace's main table.
func routeExact(ctx context.Context, t *testing.T, netns, dst string) flannelRoute {
	t.Helper()
	out, err := runCmd(ctx, "ip", "-n", netns, "-j", "route", "show", "exact", dst)
	if err != nil {
		t.Fatal(err)
	}
	var routes []flannelRoute
	if err := json.Unmarshal([]byte(out), &routes); err != nil {
		t.Fatalf("ip route show exact %s in %s: %v\n%s", dst, netns, err, out)
	}
	if len(routes) != 1 {
		all, _ := runCmd(ctx, "ip", "-n", netns, "route", "show")
		t.Fatalf("%d routes for %s in %s:\n%s", len(routes), dst, netns, all)
	}
	return routes[0]
}
