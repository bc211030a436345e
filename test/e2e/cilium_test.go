//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/internal/cluster/binaries"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/testsupport/hostsnap"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ciliumSysctls are the machine-wide settings cilium-agent writes when it owns a host. Run per
// node namespace, it must leave every one of them as it was (hostsnap checks the network ones
// that cnibench itself could touch; these are cilium's).
func ciliumSysctls() []string {
	return []string{
		"kernel/unprivileged_bpf_disabled", "kernel/timer_migration",
		"net/core/bpf_jit_enable", "net/core/default_qdisc", "net/core/fb_tunnels_only_for_init_net",
		"net/ipv4/fib_multipath_use_neigh", "net/ipv4/tcp_congestion_control",
		"net/ipv4/tcp_slow_start_after_idle", "net/ipv4/conf/all/rp_filter", "net/ipv6/conf/all/disable_ipv6",
	}
}

func readSysctls(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, s := range ciliumSysctls() {
		b, err := os.ReadFile("/proc/sys/" + s)
		if err != nil {
			out[s] = "unreadable: " + err.Error()
			continue
		}
		out[s] = strings.TrimSpace(string(b))
	}
	return out
}

// checkCilium proves on a Cilium cluster (TestDatapaths creates it) that Cilium really carries
// the pods: endpoints, agent health, the mode's devices and routes, kube-proxy replaced where
// the datapath says so, the common workload, and an enforced NetworkPolicy.
func checkCilium(ctx context.Context, t *testing.T, dp, name string, host hostState) {
	spec := readSpec(t, name)
	stateDir := cluster.DefaultLayout().Dir(name)

	t.Run("agents healthy", func(t *testing.T) {
		for i := 1; i <= spec.Nodes; i++ {
			out := ciliumDbg(ctx, t, stateDir, i, "status", "--brief")
			if strings.TrimSpace(out) != "OK" {
				t.Errorf("node%d: cilium-dbg status --brief: %q", i, out)
			}
		}
	})
	t.Run("mode devices and routes", func(t *testing.T) { checkCiliumRoutes(ctx, t, dp, spec) })

	w := newWorkload(ctx, t, name)
	t.Run("workload", func(t *testing.T) { w.run() })
	if t.Failed() {
		return
	}
	checkDualStack(t, w, spec)
	if dp == "cilium-kpr" {
		// After the workload, whose pods are on both nodes.
		checkKPRDeployment(ctx, t, spec, stateDir, host)
	}

	t.Run("pods are cilium endpoints", func(t *testing.T) {
		for _, pod := range []string{"server", "client1"} {
			p, err := w.cs.CoreV1().Pods(w.ns).Get(ctx, pod, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			node := strings.TrimPrefix(p.Spec.NodeName, "node")
			var i int
			if _, err := fmt.Sscanf(node, "%d", &i); err != nil {
				t.Fatalf("pod %s on unexpected node %q", pod, p.Spec.NodeName)
			}
			if !spec.Plan().PodCIDR(i).Contains(parseIP(t, p.Status.PodIP)) {
				t.Errorf("pod %s has %s, outside %s's pod CIDR %s", pod, p.Status.PodIP, p.Spec.NodeName, spec.Plan().PodCIDR(i))
			}
			eps := ciliumDbg(ctx, t, stateDir, i, "endpoint", "list")
			if !strings.Contains(eps, p.Status.PodIP) {
				t.Errorf("pod %s (%s) is not an endpoint of the agent on %s:\n%s", pod, p.Status.PodIP, p.Spec.NodeName, eps)
			}
		}
	})

	t.Run("NetworkPolicy denies ingress to the selected pod only, in each of its families", func(t *testing.T) {
		w.networkPolicy(t)
	})

}

// checkCiliumRoutes checks a Cilium cluster's devices and routes on node1 for its mode: the
// VXLAN device where it tunnels (and with cilium-kpr's egress gateway), direct routes to the
// other node's pods where it routes natively, in both families on a dual-stack cluster.
func checkCiliumRoutes(ctx context.Context, t *testing.T, dp string, spec cluster.Spec) {
	p := spec.Plan()
	links, _ := runCmd(ctx, "ip", "-n", spec.NodeNetns(1), "-o", "link", "show")
	routes, _ := runCmd(ctx, "ip", "-n", spec.NodeNetns(1), "route", "show")
	hasVXLAN := strings.Contains(links, "cilium_vxlan")
	peerRoute := p.PodCIDR(2).String() + " via " + p.NodeIP(2).String()
	switch dp {
	case "cilium-vxlan":
		if !hasVXLAN {
			t.Errorf("no cilium_vxlan device in node1:\n%s", links)
		}
	case "cilium-native", "cilium-kpr":
		// Pods cross nodes natively either way; the kpr deployment's egress gateway
		// carries traffic to the gateway node in Cilium's VXLAN tunnel, which it creates
		// whatever the routing mode (pkg/egressgateway enables the tunnel).
		if wantVXLAN := dp == "cilium-kpr"; hasVXLAN != wantVXLAN {
			t.Errorf("native routing with egress gateway %v, yet cilium_vxlan present %v in node1:\n%s", wantVXLAN, hasVXLAN, links)
		}
		if !strings.Contains(routes, peerRoute) {
			t.Errorf("node1 has no direct route %q:\n%s", peerRoute, routes)
		}
	}
	if !strings.Contains(links, "cilium_host") {
		t.Errorf("no cilium_host device in node1:\n%s", links)
	}
	// Native routing's direct routes take IPv6 too, between the nodes' IPv6 addresses.
	if spec.IPFamily == lab.DualStack && dp != "cilium-vxlan" {
		routes6, _ := runCmd(ctx, "ip", "-6", "-n", spec.NodeNetns(1), "route", "show")
		if want := p.PodCIDR6(2).String() + " via " + p.NodeIP6(2).String(); !strings.Contains(routes6, want) {
			t.Errorf("node1 has no direct IPv6 route %q:\n%s", want, routes6)
		}
	}
}

// ciliumHostPaths are where cilium-agent puts its files when it owns a host; none may appear.
func ciliumHostPaths() map[string]bool {
	return existing([]string{"/run/cilium", "/var/lib/cilium", "/etc/cni/net.d/05-cilium.conflist", "/opt/cni/bin/cilium-cni", "/sys/fs/bpf/tc", "/sys/fs/bpf/cilium"})
}

// networkPolicy starts a second iperf3 server on node2, checks that client1 (node1) reaches
// it, then denies all ingress to it alone: the guarded pod must become unreachable while the
// first server stays reachable. On a dual-stack cluster each step holds in both families: a
// policy enforced over IPv4 alone would leave the guarded pod open over IPv6.
func (w *workload) networkPolicy(t *testing.T) {
	guarded := w.pod("guarded", "node2", "", []string{"iperf3", "-s"})
	targets := podAddrs(w.waitRunning(guarded))
	servers := podAddrs(w.waitRunning("server"))
	// A new pod's IPv6 address may still be tentative (duplicate address detection).
	if err := w.waitReach("client1", targets, true, 20*time.Second); err != nil {
		t.Fatalf("before the policy: %v", err)
	}
	np := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "deny-guarded", Namespace: w.ns},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": guarded}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		},
	}
	if _, err := w.cs.NetworkingV1().NetworkPolicies(w.ns).Create(w.ctx, np, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := w.waitReach("client1", targets, false, time.Minute); err != nil {
		t.Fatalf("with the policy: %v", err)
	}
	t.Logf("with the policy, client1 -> guarded %v fails as it should", targets)
	if err := w.waitReach("client1", servers, true, 20*time.Second); err != nil {
		t.Errorf("the policy also cut client1 -> server: %v", err)
	}
	if err := w.cs.NetworkingV1().NetworkPolicies(w.ns).Delete(w.ctx, np.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := w.waitReach("client1", targets, true, time.Minute); err != nil {
		t.Fatalf("after the policy was removed: %v", err)
	}
}

// podAddrs is every address of a pod, one per family on a dual-stack cluster.
func podAddrs(p *corev1.Pod) []string {
	var addrs []string
	for _, ip := range p.Status.PodIPs {
		addrs = append(addrs, ip.IP)
	}
	if len(addrs) == 0 {
		addrs = append(addrs, p.Status.PodIP)
	}
	return addrs
}

// waitReach tries client -> each address, the addresses at once, until every one is reachable
// (want) or unreachable (!want), for at most patience. The error names each
// address that was not as wanted at the end.
func (w *workload) waitReach(client string, addrs []string, want bool, patience time.Duration) error {
	errs := make([]error, len(addrs))
	var wg sync.WaitGroup
	for i, addr := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			deadline := time.Now().Add(patience)
			for {
				err := w.tryIperf(client, addr)
				switch {
				case want && err == nil, !want && err != nil:
					errs[i] = nil
					return
				case want:
					errs[i] = err
				default:
					errs[i] = fmt.Errorf("%s -> %s still connects", client, addr)
				}
				if !time.Now().Before(deadline) || w.ctx.Err() != nil {
					return
				}
				time.Sleep(time.Second)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// tryIperf runs a short iperf3 TCP test that may fail, bounded by a connect timeout.
func (w *workload) tryIperf(client, target string) error {
	kubectl := binaries.Default().KubectlPath(lab.DefaultKubernetesVersion)
	ctx, cancel := context.WithTimeout(w.ctx, 30*time.Second)
	defer cancel()
	// A dropped SYN is retried for long, and iperf3's connect timeout does not end a client
	// whose SYNs Cilium drops: timeout bounds the attempt inside the pod itself, at what a
	// 1-second test needs with room to spare (each denied attempt costs all of it).
	out, err := exec.CommandContext(ctx, kubectl, "--kubeconfig", w.kubeconfig, "-n", w.ns, "exec", client, "--",
		"timeout", "5", "iperf3", "-c", target, "-t", "1", "--connect-timeout", "3000").CombinedOutput()
	if err != nil {
		return fmt.Errorf("iperf3 %s -> %s: %w: %s", client, target, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// ciliumDbg runs cilium-dbg against the agent of node i through its socket.
func ciliumDbg(ctx context.Context, t *testing.T, stateDir string, i int, args ...string) string {
	t.Helper()
	sock := filepath.Join(stateDir, "cilium", fmt.Sprintf("node%d", i), "run", "cilium.sock")
	full := append([]string{"-H", "unix://" + sock}, args...)
	out, err := runCmd(ctx, binaries.Default().Path("cilium-dbg"), full...)
	if err != nil {
		t.Fatalf("cilium-dbg on node%d: %v", i, err)
	}
	return out
}

func parseIP(t *testing.T, s string) net.IP {
	t.Helper()
	ip := net.ParseIP(s)
	if ip == nil {
		t.Fatalf("bad IP %q", s)
	}
	return ip
}

// otherClusters describes the clusters other than mine that exist now: their names and the
// address blocks they use, so that host changes they cause can be told apart from leaks.
type otherClusters map[string][]string // name -> block prefixes such as "10.201." and "fdcb:0:201:"

func currentOthers(t *testing.T, mine string) otherClusters {
	t.Helper()
	names, err := cluster.DefaultLayout().Names()
	if err != nil {
		t.Fatal(err)
	}
	return clustersNamed(slices.DeleteFunc(names, func(n string) bool { return n == mine }))
}

// clustersNamed describes the named clusters with the address blocks their specs give.
func clustersNamed(names []string) otherClusters {
	out := otherClusters{}
	for _, n := range names {
		out[n] = nil
		if spec, err := cluster.DefaultLayout().ReadSpec(n); err == nil && spec.Index >= 0 {
			b := spec.Plan().Block().IP.To4()
			out[n] = []string{fmt.Sprintf("%d.%d.", b[0], b[1])}
			// Its IPv6 block's unreachable route and addresses, when it has one.
			if spec.Family() != lab.IPv4 {
				out[n] = append(out[n], strings.TrimSuffix(spec.Plan().Block6().IP.String(), ":"))
			}
		}
	}
	return out
}

// assertCleanBeside is assertClean on a machine that other engineers' clusters share. With no
// other cluster before or after, it is assertClean. Otherwise a difference is ignored (and
// logged) only when it is provably not this test's: it names another cluster or its address
// block, it is a process that vanished (this cluster did not exist before, so that process was
// not its own), or it is a process that now runs in another cluster's cgroup.
func assertCleanBeside(t *testing.T, before hostShot, mine string, othersBefore otherClusters) {
	t.Helper()
	others := currentOthers(t, mine)
	for n, b := range othersBefore {
		if others[n] == nil {
			others[n] = b
		}
	}
	if len(others) == 0 {
		assertClean(t, before)
		return
	}
	var leaks, foreign []string
	for i := 0; i < 20; i++ {
		leaks, foreign = nil, nil
		for _, line := range hostsnap.Diff(before.Snapshot, takeHost(t)) {
			if others.explain(line, mine) {
				foreign = append(foreign, line)
			} else {
				leaks = append(leaks, line)
			}
		}
		if len(leaks) == 0 {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if len(foreign) > 0 {
		t.Logf("host differences caused by other clusters (%d), ignored:\n  %s", len(foreign), strings.Join(foreign, "\n  "))
	}
	if len(leaks) > 0 {
		t.Errorf("host differs from before the cluster existed:\n  %s", strings.Join(leaks, "\n  "))
	}
}

// explain reports whether a diff line is provably caused by another cluster.
func (o otherClusters) explain(line, mine string) bool {
	if mine != "" && strings.Contains(line, mine) {
		return false
	}
	// What vanished existed before this cluster did, so it was not this cluster's.
	if strings.HasPrefix(line, "- process ") || strings.HasPrefix(line, "- netns-inode ") {
		return true
	}
	tokens := strings.FieldsFunc(line, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-')
	})
	for name, blocks := range o {
		for _, block := range blocks {
			if strings.Contains(line, " "+block) {
				return true
			}
		}
		for _, tok := range tokens {
			if tok == name || tok == "cnb-"+name || strings.HasPrefix(tok, "cnb-"+name+"-") {
				return true
			}
		}
	}
	// Shared by all clusters: the host directories exist while any cluster does (the first
	// create makes them, the last delete removes those a cluster created), and the count of
	// namespace mounts sums over all of them (each namespace is also listed by name).
	for _, shared := range []string{"mount /run/netns ", "mount /var/lib/cni ", "nsfs-mounts "} {
		if strings.HasPrefix(line, "+ "+shared) || strings.HasPrefix(line, "- "+shared) {
			return true
		}
	}
	for _, dir := range []string{"/run/netns", "/var/lib/cni", "/var/lib/kubelet", "/var/log/containers"} {
		if line == "+ path "+dir || line == "- path "+dir {
			return true
		}
	}
	if _, holder, ok := strings.Cut(line, "(held by pid "); ok {
		pid, _, _ := strings.Cut(holder, " ")
		return o.pidInOtherCgroup(pid)
	}
	if cmd, ok := strings.CutPrefix(line, "+ process "); ok {
		_, args, _ := strings.Cut(cmd, ": ")
		// hostsnap numbers identical command lines: "sleep infinity #2" is the second.
		k := 1
		if i := strings.LastIndex(args, " #"); i >= 0 && strings.Trim(args[i+2:], "0123456789") == "" {
			k, _ = strconv.Atoi(args[i+2:])
			args = args[:i]
		}
		return o.processInOtherCgroup(args, k)
	}
	return false
}

// pidInOtherCgroup reports whether a live process runs in another cluster's cgroup or belongs
// to another lane of tests (lanes_test.go).
func (o otherClusters) pidInOtherCgroup(pid string) bool {
	if otherLane(pid) {
		return true
	}
	cg, err := os.ReadFile("/proc/" + pid + "/cgroup")
	if err != nil {
		return false
	}
	for name := range o {
		if strings.Contains(string(cg), "/cnb-"+name+"/") {
			return true
		}
	}
	return false
}

// processInOtherCgroup reports whether the k-th live process with this command line cannot be
// this test's: fewer than k of them run outside other clusters' cgroups and other lanes.
func (o otherClusters) processInOtherCgroup(args string, k int) bool {
	entries, _ := os.ReadDir("/proc")
	found, ours := false, 0
	for _, e := range entries {
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || strings.Join(strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00"), " ") != args {
			continue
		}
		found = true
		if !o.pidInOtherCgroup(e.Name()) {
			ours++
		}
	}
	return found && ours < k
}
