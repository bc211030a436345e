//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/record"
)

// The IPv6 clusters: flannel-vxlan IPv6-only (the controller-manager allocates the nodes'
// IPv6 pod CIDRs, flanneld tunnels between the nodes' IPv6 addresses), bridge dual-stack (the
// nodes' two pod CIDRs written by the cluster, routed by the node namespaces).
const (
	v6Cluster   = "cnb-fam6"
	dualCluster = "cnb-famd"
)

// familySuite measures both clusters interleaved: the IPv6-only one over IPv6, the dual-stack
// one over each family.
const familySuite = `
targets:
  - name: flannel6
    local: {cluster: cnb-fam6, datapath: flannel-vxlan, ipFamily: ipv6}
  - name: bridge-dual
    local: {cluster: cnb-famd, datapath: bridge, ipFamily: dual}
    families: [ipv4, ipv6]
paths: [host-network, cross-node, pod-to-service, localhost]
workloads: [{kind: tcp-stream}, {kind: tcp-rr, size: 64}]
repetitions: 2
duration: 1s
warmup: off
`

// TestIPFamilies is testFamilies, then the host as before: IPv6 routes, addresses,
// neighbours and ip6 nftables objects included.
func TestIPFamilies(t *testing.T) {
	before := snapshot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	defer forceDelete(v6Cluster)
	defer forceDelete(dualCluster)
	testFamilies(ctx, t, t.TempDir())
	assertClean(t, before)
}

// testFamilies creates an IPv6-only and a dual-stack cluster on two datapaths, checks
// pod-to-pod, Service and DNS in each of their families with iperf3 and getent in pods, then
// measures both families in one interleaved run and checks that each target's traffic took
// its family's addresses. The caller checks the host clean after the delete.
func testFamilies(ctx context.Context, t *testing.T, dir string) {
	createClusters(ctx, t, []string{"--name", v6Cluster, "--datapath", "flannel-vxlan", "--ip-family", "ipv6"},
		[]string{"--name", dualCluster, "--datapath", "bridge", "--ip-family", "dual"})
	defer func() {
		for _, name := range []string{v6Cluster, dualCluster} {
			deleteCluster(ctx, t, name)
		}
	}()
	// Nothing for the clusters' IPv6 ranges may leave through a host's IPv6 default route.
	out, err := exec.Command("ip", "-6", "route", "show", "type", "unreachable").CombinedOutput()
	for _, name := range []string{v6Cluster, dualCluster} {
		if block := readSpec(t, name).Plan().Block6().String(); err != nil || !strings.Contains(string(out), block+" ") {
			t.Errorf("no unreachable route for %s's %s in the root namespace (%v):\n%s", name, block, err, out)
		}
	}
	t.Run("ipv6-only flannel-vxlan", func(t *testing.T) { checkFamilyPaths(t, newWorkload(ctx, t, v6Cluster), []string{"ipv6"}) })
	t.Run("dual-stack bridge", func(t *testing.T) {
		checkFamilyPaths(t, newWorkload(ctx, t, dualCluster), []string{"ipv4", "ipv6"})
	})
	results := filepath.Join(dir, "families.db")
	suiteFile := filepath.Join(dir, "families.yaml")
	doc := runSuiteOn(ctx, t, familySuite, suiteFile, results)
	if doc.Run.Status != "complete" {
		t.Fatalf("run status %q", doc.Run.Status)
	}
	wantNodes := map[string]string{"flannel6": "ipv6", "bridge-dual.ipv4": "ipv4,ipv6", "bridge-dual.ipv6": "ipv4,ipv6"}
	for _, tg := range doc.Targets {
		if got := tg.Fingerprint["node_a_ip_families"]; got != wantNodes[tg.Name] {
			t.Errorf("target %s: node_a_ip_families %q, want %q", tg.Name, got, wantNodes[tg.Name])
		}
		// The family of the Service the run created, from its ClusterIP.
		want := "ipv6"
		if strings.HasSuffix(tg.Name, ".ipv4") {
			want = "ipv4"
		}
		if tg.Fingerprint["service_ip_family"] != want {
			t.Errorf("target %s: service_ip_family %q, want %q", tg.Name, tg.Fingerprint["service_ip_family"], want)
		}
		delete(wantNodes, tg.Name)
	}
	if len(wantNodes) > 0 {
		t.Errorf("targets missing from the run: %v", wantNodes)
	}
	_, samples := onlyRun(ctx, t, results, "")
	checkSampleFamilies(t, samples)
}

// checkDualStack runs checkFamilyPaths over both families on a dual-stack cluster, in a
// namespace of its own beside the workload's.
func checkDualStack(t *testing.T, w *workload, spec cluster.Spec) {
	if spec.IPFamily != lab.DualStack {
		return
	}
	t.Run("dual-stack: pod-to-pod, Service and DNS in each family", func(t *testing.T) {
		fw := *w
		fw.ns = "e2e-families"
		checkFamilyPaths(t, &fw, []string{lab.IPv4, lab.IPv6})
	})
}

// checkFamilyPaths runs an iperf3 server on node2 behind one single-stack Service per family,
// and from node1 checks each family's pod-to-pod and Service path and the Service's name.
func checkFamilyPaths(t *testing.T, w *workload, families []string) {
	if _, err := w.cs.CoreV1().Namespaces().Create(w.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	server := w.pod("server", "node2", "", []string{"iperf3", "-s"})
	client := w.pod("client", "node1", "", []string{"sleep", "infinity"})
	svcs := map[string]*corev1.Service{}
	for _, fam := range families {
		single := corev1.IPFamilyPolicySingleStack
		svc, err := w.cs.CoreV1().Services(w.ns).Create(w.ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "iperf-" + fam, Namespace: w.ns},
			Spec: corev1.ServiceSpec{
				Selector: map[string]string{"app": "server"}, IPFamilyPolicy: &single,
				IPFamilies: []corev1.IPFamily{map[string]corev1.IPFamily{"ipv4": corev1.IPv4Protocol, "ipv6": corev1.IPv6Protocol}[fam]},
				Ports:      []corev1.ServicePort{{Port: 5201, TargetPort: intstr.FromInt32(5201)}},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		svcs[fam] = svc
	}
	srv := w.waitRunning(server)
	w.waitRunning(client)
	if len(srv.Status.PodIPs) != len(families) {
		t.Errorf("server pod has addresses %v, want one of each of %v", srv.Status.PodIPs, families)
	}
	for i, fam := range families {
		t.Run(fam, func(t *testing.T) {
			podIP := srv.Status.PodIPs[min(i, len(srv.Status.PodIPs)-1)].IP
			if got := familyOfAddr(podIP); got != fam {
				t.Fatalf("server's address %d is %s, of %s; want %s", i, podIP, got, fam)
			}
			w.iperf(t, client, podIP)
			ip := svcs[fam].Spec.ClusterIP
			if got := familyOfAddr(ip); got != fam {
				t.Errorf("Service iperf-%s has ClusterIP %s, of %s", fam, ip, got)
			}
			w.iperf(t, client, ip)
			// CoreDNS answers A or AAAA, whichever the Service has.
			name := fmt.Sprintf("iperf-%s.%s.svc.cluster.local", fam, w.ns)
			if out := w.exec(t, client, "getent", "ahosts", name); !strings.Contains(out, ip+" ") {
				t.Errorf("getent ahosts %s: %q, want %s", name, out, ip)
			}
		})
	}
}

// familyOfAddr is ipv4 or ipv6, "" for no address.
func familyOfAddr(s string) string {
	ip, err := netip.ParseAddr(s)
	switch {
	case err != nil:
		return ""
	case ip.Is4():
		return "ipv4"
	}
	return "ipv6"
}

// remoteHost is the server address iperf3 reports connecting to.
var remoteHost = regexp.MustCompile(`"remote_host":\s*"([^"]+)"`)

// checkSampleFamilies checks, in every iperf3 sample's own report, that the client connected
// to an address of its target's family: IPv6 for flannel6 and bridge-dual.ipv6, IPv4 for
// bridge-dual.ipv4, on every path (the node's address on the host network, ::1 on localhost,
// the Service's ClusterIP through it).
func checkSampleFamilies(t *testing.T, samples []record.Sample) {
	seen := map[string]int{}
	for _, s := range samples {
		m := remoteHost.FindAllStringSubmatch(s.Raw, -1)
		if s.Workload != "tcp-stream/1" || len(m) == 0 {
			continue
		}
		want := "ipv6"
		if strings.HasSuffix(s.Target, ".ipv4") {
			want = "ipv4"
		}
		for _, g := range m {
			if got := familyOfAddr(g[1]); got != want {
				t.Errorf("%s %s round %d: iperf3 connected to %s (%s), want %s", s.Target, s.Path, s.Round, g[1], got, want)
			}
		}
		if s.Error != "" {
			t.Errorf("%s %s round %d: %s", s.Target, s.Path, s.Round, s.Error)
		}
		seen[s.Target+" "+s.Path]++
	}
	for _, tg := range []string{"flannel6", "bridge-dual.ipv4", "bridge-dual.ipv6"} {
		for _, p := range []string{"host-network", "cross-node", "pod-to-service", "localhost"} {
			if seen[tg+" "+p] < 2 {
				t.Errorf("%s %s: %d tcp-stream samples with iperf3's report, want 2", tg, p, seen[tg+" "+p])
			}
		}
	}
}
