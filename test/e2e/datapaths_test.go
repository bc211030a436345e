//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/internal/cluster/binaries"
	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/suite"
)

// datapathFamilies are the datapaths measured side by side, in the order they are created. Each
// family is alive at once (five clusters fit root's default 128 inotify instances, which
// TestClusterLifecycle checks a cluster's share of); bridge, the baseline of both, stays from
// the first family to the second.
func datapathFamilies() [][]string {
	return [][]string{
		{"bridge", "flannel-vxlan", "flannel-host-gw", "cilium-vxlan", "cilium-native"},
		{"bridge", "calico-vxlan", "canal", "cilium-kpr", "calico-ebpf"},
	}
}

// underlayMTU is the MTU the test gives a datapath's cluster: jumbo frames for a routed and an
// encapsulating one, whose pods the interleaved run checks.
func underlayMTU(dp string) int {
	if dp == "flannel-vxlan" || dp == "cilium-native" {
		return lab.MaxMTU
	}
	return lab.DefaultMTU
}

// dualStack says which datapaths' clusters the test builds dual-stack: those whose IPv6
// TestIPFamilies does not cover (Cilium's native routing and kube-proxy replacement, with
// direct routes, BPF Services and masquerading; Calico's IPv6 pools and VXLAN; canal's felix
// beside flannel's IPv6). Their runs measure IPv4, the primary family; their own checks add
// both families' paths.
func dualStack(dp string) bool {
	return slices.Contains([]string{"cilium-native", "cilium-kpr", "calico-vxlan", "canal"}, dp)
}

// wantPodMTU is the MTU a datapath's pods get on an underlay of mtu: their interface's, and
// their default route's where the datapath lowers that instead (Cilium's tunnel, which
// cilium-kpr's egress gateway brings along), else 0.
func wantPodMTU(dp string, mtu int) (iface, route int) {
	switch dp {
	case "cilium-vxlan", "cilium-kpr":
		return mtu, mtu - 50
	case "calico-vxlan":
		// Calico's VXLAN over IPv6 costs 70 bytes: a dual-stack cluster's pods fit both tunnels.
		if dualStack(dp) {
			return mtu - 70, 0
		}
		return mtu - 50, 0
	case "flannel-vxlan", "canal", "calico-ebpf":
		return mtu - 50, 0
	}
	return mtu, 0
}

// checkMTU compares what a run's fingerprint says of a datapath's underlay and pods with what
// its cluster was given.
func checkMTU(t *testing.T, dp string, fp map[string]string) {
	t.Helper()
	mtu := underlayMTU(dp)
	iface, route := wantPodMTU(dp, mtu)
	if fp["underlay_mtu"] != strconv.Itoa(mtu) || fp["pod_mtu"] != strconv.Itoa(iface) {
		t.Errorf("%s: underlay MTU %q, pod MTU %q; want %d and %d", dp, fp["underlay_mtu"], fp["pod_mtu"], mtu, iface)
	}
	// A route without an MTU of its own, or one equal to the interface's, lowers nothing.
	if got, ok := fp["pod_route_mtu"]; route != 0 && got != strconv.Itoa(route) || route == 0 && ok && got != strconv.Itoa(iface) {
		t.Errorf("%s: pod route MTU %q (present %v), want %d", dp, got, ok, route)
	}
}

// checkProbedNodes checks the node probe's facts of a datapath's target: both nodes' uplinks
// at the underlay's MTU, and the device each node routes the other's pods through: the
// uplink where the datapath routes, its tunnel device where it encapsulates (Cilium's BPF
// takes its tunnel from cilium_host, the device its routes name).
func checkProbedNodes(t *testing.T, dp string, fp map[string]string) {
	t.Helper()
	via := map[string]string{"bridge": "eth0", "flannel-host-gw": "eth0", "flannel-vxlan": "flannel.1", "cilium-vxlan": "cilium_host"}[dp]
	for _, node := range []string{"node_a", "node_b"} {
		if got := fp[node+"_uplink_mtu"]; got != strconv.Itoa(underlayMTU(dp)) || fp[node+"_uplink_interface"] != "eth0" {
			t.Errorf("%s: %s's uplink %q at MTU %q, want eth0 at %d", dp, node, fp[node+"_uplink_interface"], got, underlayMTU(dp))
		}
		if got := fp[node+"_remote_pods_interface"]; got == "" || via != "" && got != via {
			t.Errorf("%s: %s reaches the other node's pods through %q, want %q", dp, node, got, via)
		}
	}
}

// remoteDatapaths are the clusters of the last family the remote run measures as a user's own.
func remoteDatapaths(family []string) []string { return family[1:3] }

// hostState is what the datapaths must not change on the host, read before any of their
// clusters existed: the files their daemons would write when they own a host, the sysctls
// cilium-agent sets, the socket programs on the host's cgroup2 root and the root namespace's
// iptables rules.
type hostState struct {
	flannelPaths, ciliumPaths, calicoPaths map[string]bool
	sysctls                                map[string]string
	rootPrograms                           []ebpf.ProgramID
	rootRules                              string
}

func readHostState(t *testing.T) hostState {
	t.Helper()
	rules, _ := runCmd(context.Background(), "iptables-nft-save")
	return hostState{
		flannelPaths: existing(flannelHostPaths()), ciliumPaths: ciliumHostPaths(), calicoPaths: calicoHostPaths(),
		sysctls: readSysctls(t), rootPrograms: rootSocketPrograms(t), rootRules: rules,
	}
}

// existing reports which of the paths exist now.
func existing(paths []string) map[string]bool {
	out := map[string]bool{}
	for _, p := range paths {
		_, err := os.Lstat(p)
		out[p] = err == nil
	}
	return out
}

// assertUnchanged fails for a datapath's host path that appeared or a sysctl that changed.
func (h hostState) assertUnchanged(t *testing.T) {
	t.Helper()
	for _, paths := range []map[string]bool{h.flannelPaths, h.ciliumPaths, h.calicoPaths} {
		for p, existed := range paths {
			if _, err := os.Lstat(p); err == nil && !existed {
				t.Errorf("%s exists on the host", p)
			}
		}
	}
	after := readSysctls(t)
	for k, v := range h.sysctls {
		if after[k] != v {
			t.Errorf("sysctl %s changed: %q -> %q", k, v, after[k])
		}
	}
}

// checkDatapath runs a datapath's own checks on its cluster: that its daemons really carry the
// pods (devices, routes, addresses, endpoints), the common workload, and NetworkPolicy where it
// enforces. Bridge has none of its own: every other test runs on it.
func checkDatapath(ctx context.Context, t *testing.T, dp, name string, host hostState) {
	switch dp {
	case "flannel-vxlan":
		checkFlannel(ctx, t, "vxlan", name, host)
	case "flannel-host-gw":
		checkFlannel(ctx, t, "host-gw", name, host)
	case "cilium-vxlan", "cilium-native", "cilium-kpr":
		checkCilium(ctx, t, dp, name, host)
	case "calico-vxlan", "canal", "calico-ebpf":
		checkCalico(ctx, t, dp, name, host)
	}
}

// TestDatapaths creates one cluster per datapath, once, a family's at once: each datapath's own
// checks run on it, then the family is measured side by side in one interleaved run (`run
// --datapaths`, which uses the clusters that exist), the last family's second and third also
// as remote clusters reached by kubeconfig alone, and after the last delete the host must be
// as before, with no datapath's host paths and no changed sysctl. Clusters a family no longer
// needs are deleted before the next family's are created, each checked to leave nothing of
// its own.
func TestDatapaths(t *testing.T) {
	for _, c := range []string{binaries.Flannel, binaries.Cilium, binaries.Calico, binaries.CalicoBPF} {
		requireBuilt(t, c)
	}
	before := snapshot(t)
	host := readHostState(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Minute)
	defer cancel()
	alive := map[string]bool{}
	defer func() {
		for dp := range alive {
			forceDelete(suite.ClusterNameFor(dp))
		}
	}()
	families := datapathFamilies()
	for i, family := range families {
		var fresh []string
		var creates [][]string
		for _, dp := range family {
			if alive[dp] {
				continue
			}
			alive[dp] = true
			fresh = append(fresh, dp)
			args := []string{"--name", suite.ClusterNameFor(dp), "--datapath", dp}
			if strings.HasPrefix(dp, "cilium-") { // the agents take longer to become ready
				args = append(args, "--wait", "6m")
			}
			if dualStack(dp) {
				args = append(args, "--ip-family", lab.DualStack)
			}
			if mtu := underlayMTU(dp); mtu != lab.DefaultMTU {
				args = append(args, "--mtu", strconv.Itoa(mtu))
			}
			if i == len(families)-1 && slices.Contains(remoteDatapaths(family), dp) {
				args = append(args, "--registry") // their nodes pull the remote run's image from it
			}
			creates = append(creates, args)
		}
		createClusters(ctx, t, creates...)
		for _, dp := range fresh {
			name := suite.ClusterNameFor(dp)
			t.Run(dp, func(t *testing.T) {
				checkDatapath(ctx, t, dp, name, host)
				t.Run("the API alone names the CNI and its mode", func(t *testing.T) { checkDetectedCNI(ctx, t, dp, name) })
			})
		}
		t.Run("interleaved "+strings.Join(family, ","), func(t *testing.T) { testInterleaved(ctx, t, family) })
		if i == len(families)-1 {
			remote := remoteDatapaths(family)
			t.Run("remote: "+strings.Join(remote, " and ")+" by kubeconfig", func(t *testing.T) { testRemoteClusters(ctx, t, remote) })
		}
		var next []string
		if i+1 < len(families) {
			next = families[i+1]
		}
		for _, dp := range family {
			if alive[dp] && !slices.Contains(next, dp) {
				deleteDatapath(ctx, t, dp, before)
				delete(alive, dp)
			}
		}
	}
	// With the families' clusters gone: two more at once stay within root's inotify instances.
	t.Run("A/A: two identical bridge clusters", func(t *testing.T) { testAA(ctx, t) })
	assertClean(t, before)
	host.assertUnchanged(t)
}

// deleteDatapath deletes a family's cluster and checks that it left nothing of its own beside
// the clusters still alive (before: the host before any of them existed).
func deleteDatapath(ctx context.Context, t *testing.T, dp string, before hostShot) {
	t.Helper()
	name := suite.ClusterNameFor(dp)
	others := currentOthers(t, name)
	deleteCluster(ctx, t, name)
	assertCleanBeside(t, before, name, others)
	if _, err := os.Stat(filepath.Join(cluster.DefaultLayout().Dir(name), "calico")); err == nil {
		t.Errorf("%s: the cluster's calico directory survived delete", name)
	}
}

// detectedCNI is what a run's fingerprint must say of each datapath's cluster from the API
// alone, as it would of a remote cluster: the CNI and its mode where its agents annotate the
// Nodes with it, "unknown" where nothing in the API says (bridge has no agent).
var detectedCNI = map[string][2]string{
	"bridge":          {"unknown", ""},
	"flannel-vxlan":   {"flannel", "backend=vxlan"},
	"flannel-host-gw": {"flannel", "backend=host-gw"},
	"cilium-vxlan":    {"cilium", ""},
	"cilium-native":   {"cilium", ""},
	"cilium-kpr":      {"cilium", ""},
	"calico-vxlan":    {"calico", "encapsulation=vxlan"},
	"calico-ebpf":     {"calico", "encapsulation=vxlan"},
	"canal":           {"canal", "backend=vxlan"},
}

// checkDetectedCNI compares the remote fingerprint's CNI detection with the datapath the
// local cluster's spec records.
func checkDetectedCNI(ctx context.Context, t *testing.T, dp, name string) {
	c, err := kube.Connect(cluster.DefaultLayout().Kubeconfig(name), "")
	if err != nil {
		t.Fatal(err)
	}
	want, ok := detectedCNI[dp]
	if !ok {
		t.Fatalf("no expected detection for datapath %s", dp)
	}
	if cni, mode := c.DetectCNI(ctx); cni != want[0] || mode != want[1] {
		t.Errorf("detected %s %q, want %s %q", cni, mode, want[0], want[1])
	}
	// kube-proxy's mode, from the ConfigMap the cluster publishes where kubeadm does; none
	// where the datapath replaces kube-proxy.
	wantProxy := lab.DefaultProxyMode(dp)
	if wantProxy == lab.ProxyNone {
		wantProxy = "none or unknown"
	}
	if got := c.DetectProxyMode(ctx); got != wantProxy {
		t.Errorf("detected kube-proxy mode %q, want %q", got, wantProxy)
	}
}
