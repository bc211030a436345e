//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cnibench/cnibench/internal/cgroupfs"
	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/internal/testsupport/hostsnap"
)

// rootSocketPrograms lists the connect4 programs on the host's cgroup2 root.
func rootSocketPrograms(t *testing.T) []ebpf.ProgramID {
	t.Helper()
	root, err := cgroupfs.Cgroup2Mount()
	if err != nil || root == "" {
		t.Fatalf("cgroup2 root: %q, %v", root, err)
	}
	progs, err := hostsnap.CgroupPrograms(root, false)
	if err != nil {
		t.Fatal(err)
	}
	return progs["connect4"]
}

// checkKPR checks a cilium-kpr cluster: the nodes run no kube-proxy, each agent says it
// replaces it, and its socket load balancer serves its own node only (checkNodeSocketLB).
func checkKPR(ctx context.Context, t *testing.T, spec cluster.Spec, stateDir string, rootBefore []ebpf.ProgramID) {
	for i := 1; i <= spec.Nodes; i++ {
		// What the fingerprint records, as the agent reports it.
		out := ciliumDbg(ctx, t, stateDir, i, "status")
		for _, want := range []string{`KubeProxyReplacement:\s+True`, `Routing:\s+Network: Native\s+Host: BPF`, `Masquerading:\s+BPF`} {
			if !regexp.MustCompile(want).MatchString(out) {
				t.Errorf("node%d: cilium-dbg status does not say %s:\n%s", i, want, out)
			}
		}
	}
	checkNodeSocketLB(ctx, t, spec, stateDir, rootBefore)
}

// checkNodeSocketLB checks a cluster whose datapath replaces kube-proxy with connect-time load
// balancing: the nodes run no kube-proxy, and each node's connect4 programs are attached to its
// own cgroup2 subtree, which every pod of that node inherits and no pod of another node does;
// the host's root cgroup gets nothing.
func checkNodeSocketLB(ctx context.Context, t *testing.T, spec cluster.Spec, stateDir string, rootBefore []ebpf.ProgramID) {
	root, _ := cgroupfs.Cgroup2Mount()
	if got := rootSocketPrograms(t); !slices.Equal(got, rootBefore) {
		t.Errorf("connect4 programs on the host's cgroup2 root: %v, before the cluster %v", got, rootBefore)
	}
	perNode := map[int][]ebpf.ProgramID{}
	for i := 1; i <= spec.Nodes; i++ {
		if _, err := os.Stat(filepath.Join(stateDir, "run", spec.NodeName(i)+"-kube-proxy.pid")); err == nil {
			t.Errorf("%s runs kube-proxy", spec.NodeName(i))
		}
		if out, _ := runCmd(ctx, "ip", "netns", "exec", spec.NodeNetns(i), "nft", "list", "tables"); strings.Contains(out, "kube-proxy") {
			t.Errorf("%s has kube-proxy's nftables table:\n%s", spec.NodeName(i), out)
		}
		progs, err := hostsnap.CgroupPrograms(filepath.Join(root, spec.CgroupRoot(), spec.NodeName(i)), false)
		if err != nil {
			t.Fatal(err)
		}
		if len(progs["connect4"]) == 0 {
			t.Errorf("no connect4 program on %s's cgroup: %v", spec.NodeName(i), progs)
		}
		perNode[i] = progs["connect4"]
	}
	for i := 1; i <= spec.Nodes; i++ {
		dir := podCgroup(t, root, spec, i)
		eff, err := hostsnap.CgroupPrograms(dir, true)
		if err != nil {
			t.Fatal(err)
		}
		for j, ids := range perNode {
			for _, id := range ids {
				if has := slices.Contains(eff["connect4"], id); has != (i == j) {
					t.Errorf("a pod cgroup of %s (%s) runs %s's connect4 program %d: %v", spec.NodeName(i), dir, spec.NodeName(j), id, has)
				}
			}
		}
	}
}

// podCgroup finds the cgroup2 directory of a process in a pod of node i (CoreDNS or the
// workload's), from /proc.
func podCgroup(t *testing.T, root string, spec cluster.Spec, i int) string {
	t.Helper()
	prefix := "0::" + spec.CgroupRoot() + "/" + spec.NodeName(i) + "/kubepods"
	dirs, _ := filepath.Glob("/proc/[0-9]*/cgroup")
	for _, f := range dirs {
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), prefix) {
				fh.Close()
				return filepath.Join(root, strings.TrimPrefix(sc.Text(), "0::"))
			}
		}
		fh.Close()
	}
	t.Fatalf("no process of a pod on %s (cgroup2 %s...)", spec.NodeName(i), prefix)
	return ""
}

// checkKPRDeployment runs what only the cilium-kpr deployment has: kube-proxy replaced, and
// Cilium's own egress gateway.
func checkKPRDeployment(ctx context.Context, t *testing.T, spec cluster.Spec, stateDir string, host hostState) {
	t.Run("kube-proxy replaced: no kube-proxy, socket LB on the nodes' cgroups only", func(t *testing.T) {
		checkKPR(ctx, t, spec, stateDir, host.rootPrograms)
	})
	t.Run("egress through Cilium's gateway in both families", func(t *testing.T) { checkCiliumEgress(ctx, t, spec) })
}

// ciliumEgressSuite measures both egress paths of a cilium-kpr cluster in both families,
// briefly: the source proof before each sample is the check, the figures its by-product.
const ciliumEgressSuite = `
targets:
  - name: kpr
    local: {cluster: %s, datapath: cilium-kpr, ipFamily: dual}
families: [ipv4, ipv6]
paths: [egress, egress-gateway]
workloads:
  - {kind: tcp-rr, size: 64}
repetitions: 2
duration: 2s
warmup: off
`

// checkCiliumEgress runs ciliumEgressSuite on a dual-stack cilium-kpr cluster: the
// CiliumEgressGatewayPolicy must take each family's traffic for the gateway address out
// through the gateway node, SNATed to its address of that family (an IPv6 source Cilium takes
// from the interface the policy names), and the direct path must leave by the client's node.
func checkCiliumEgress(ctx context.Context, t *testing.T, spec cluster.Spec) {
	dir := t.TempDir()
	doc := runSuiteOn(ctx, t, fmt.Sprintf(ciliumEgressSuite, spec.Name), filepath.Join(dir, "egress.yaml"), filepath.Join(dir, "egress.db"))
	p := spec.Plan()
	want := map[string]string{"kpr.ipv4": p.NodeIP(2).String(), "kpr.ipv6": p.NodeIP6(2).String()}
	for _, tg := range doc.Targets {
		if got := tg.Fingerprint["egress_gateway"]; got != "node2 (SNAT to "+want[tg.Name]+")" || tg.Fingerprint["egress_gateway_impl"] != "CiliumEgressGatewayPolicy" {
			t.Errorf("target %s: egress_gateway %q by %q, want node2 (SNAT to %s) by CiliumEgressGatewayPolicy", tg.Name, got, tg.Fingerprint["egress_gateway_impl"], want[tg.Name])
		}
	}
	measured := map[string]bool{}
	for _, r := range doc.Rows {
		if r.Metric == "latency_p50_us" && r.N == 2 && r.Mean > 0 {
			measured[r.Target+" "+r.Path] = true
		}
	}
	for tg := range want {
		for _, path := range []string{"egress", "egress-gateway"} {
			if !measured[tg+" "+path] {
				t.Errorf("%s %s: no sample passed its source proof (measured: %v)", tg, path, measured)
			}
		}
	}
}
