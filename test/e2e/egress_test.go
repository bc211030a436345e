//go:build e2e

package e2e

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/agentcmd"
	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/internal/external"
	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/lab"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

const egressCluster = "egr"

// trafficSuite is the traffic-engineering study's egress in short: a pod to the external host
// directly and through the gateway node, over IPv4 and IPv6 (the cluster is dual-stack).
const trafficSuite = `
targets:
  - name: bridge
    local: {cluster: egr, datapath: bridge}
families: [ipv4, ipv6]
paths: [egress, egress-gateway]
workloads:
  - {kind: tcp-stream, streams: 1}
  - {kind: tcp-rr, size: 64}
  - {kind: tcp-crr, size: 64}
repetitions: 2
duration: 3s
warmup: off
`

// gatewaysSuite is its ingress: a Gateway API split at 1 and 100 virtual users through Traefik
// and through Envoy Gateway, both on the one cluster, interleaved.
const gatewaysSuite = `
targets:
  - name: traefik
    local: {cluster: egr, datapath: bridge}
  - name: envoy
    local: {cluster: egr, datapath: bridge}
    gateway: envoy
paths: [gateway]
workloads:
  - {kind: gateway-split, weight: 40, vus: [1, 100]}
repetitions: 2
duration: 5s
warmup: off
`

// brokenGatewaySuite measures only the egress gateway, briefly.
const brokenGatewaySuite = `
targets:
  - name: bridge
    local: {cluster: egr, datapath: bridge}
paths: [egress-gateway]
workloads:
  - {kind: tcp-rr, size: 64}
repetitions: 2
duration: 1s
warmup: off
`

// TestTrafficEngineering creates a dual-stack cluster with its external host, the Gateway API
// and Envoy Gateway, measures both egress paths in both families with the source address
// proved before every sample,
// then a weighted split through Traefik and through Envoy Gateway in one run, then breaks the egress gateway (the client's node sends the
// gateway's traffic out itself, SNATed to its own address) and expects every egress-gateway
// sample to fail on the proof. The external namespace goes with the cluster.
func TestTrafficEngineering(t *testing.T) {
	for _, c := range []string{"traefik", "gateway-api", "k6", "envoy-gateway", "envoy"} {
		requireBuilt(t, c)
	}
	before := snapshot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	defer forceDelete(egressCluster)
	createCluster(ctx, t, "--name", egressCluster, "--envoy-gateway", "--ip-family", lab.DualStack)
	spec, err := cluster.DefaultLayout().ReadSpec(egressCluster)
	if err != nil {
		t.Fatal(err)
	}
	ext, ok := spec.External()
	if !ok || ext.GatewayNode != "node2" || ext.ViaGateway6 == "" || !spec.GatewayAPI || !spec.EnvoyGateway {
		t.Fatalf("external host %+v, %v, Gateway API %v, Envoy Gateway %v; want one with gateway node2 in both families, and both", ext, ok, spec.GatewayAPI, spec.EnvoyGateway)
	}
	c, err := kube.Connect(cluster.DefaultLayout().Kubeconfig(egressCluster), "")
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := c.CS.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: kube.LabelEgressGateway})
	if err != nil || len(nodes.Items) != 1 || nodes.Items[0].Name != "node2" {
		t.Fatalf("gateway label: %v, %+v", err, nodes)
	}
	dir := t.TempDir()
	checkEgressRun(ctx, t, spec, ext, dir)
	t.Run("the external agent answers only its token", func(t *testing.T) { checkExternalToken(ctx, t, spec) })
	t.Run("the split through Traefik and Envoy Gateway", func(t *testing.T) { checkGateways(ctx, t, c, dir) })
	// The runs' cluster-wide objects (the classes, Traefik's role and binding) went with them.
	for what, n := range map[string]func() (int, error){
		"cluster roles": func() (int, error) {
			l, err := c.CS.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{LabelSelector: kube.LabelManagedBy + "=cnibench"})
			return len(l.Items), err
		},
		"cluster role bindings": func() (int, error) {
			l, err := c.CS.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{LabelSelector: kube.LabelManagedBy + "=cnibench"})
			return len(l.Items), err
		},
	} {
		if got, err := n(); err != nil || got != 0 {
			t.Errorf("%s of the run left: %d (%v)", what, got, err)
		}
	}

	t.Run("a gateway bypassed fails every egress-gateway sample on its proof", func(t *testing.T) { checkBrokenGateway(ctx, t, spec, ext, dir) })
	deleteCluster(ctx, t, egressCluster)
	if _, err := os.Stat("/run/netns/" + spec.ExtNetns()); !os.IsNotExist(err) {
		t.Errorf("external namespace %s still there after delete (%v)", spec.ExtNetns(), err)
	}
	assertClean(t, before)
}

// checkEgressRun measures trafficSuite on the dual-stack cluster: each family's target must
// name the host's address and the gateway's SNAT of its own family, and measure every figure.
func checkEgressRun(ctx context.Context, t *testing.T, spec cluster.Spec, ext cluster.External, dir string) {
	t.Helper()
	suiteFile, results := filepath.Join(dir, "suite.yaml"), filepath.Join(dir, "results.db")
	if err := os.WriteFile(suiteFile, []byte(trafficSuite), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := cli(ctx, "run", "-f", suiteFile, "--results", results, "-o", "json")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	doc := summaryOf(t, out, 2)
	p := spec.Plan()
	// Each family's samples went to the host's address of that family, through the gateway's
	// address of that family: the proof before every sample compared the source with it.
	wantTargets := map[string][2]string{
		"bridge.ipv4": {ext.Direct, p.NodeIP(2).String()},
		"bridge.ipv6": {ext.Direct6, p.NodeIP6(2).String()},
	}
	for _, tg := range doc.Targets {
		w, ok := wantTargets[tg.Name]
		if got := tg.Fingerprint["egress_gateway"]; !ok || got != "node2 (SNAT to "+w[1]+")" || tg.Fingerprint["external_host"] != w[0] {
			t.Errorf("target %s: fingerprint egress_gateway %q, external_host %q; want node2 (SNAT to %s) and %s", tg.Name, got, tg.Fingerprint["external_host"], w[1], w[0])
		}
	}
	measured := map[string]float64{}
	for _, r := range doc.Rows {
		if r.N == 2 && (r.Metric == "throughput_gbps" || r.Metric == "latency_p50_us" || r.Metric == "connections_per_s") {
			measured[r.Target+" "+r.Path+" "+r.Metric] = r.Mean
		}
	}
	for tg := range wantTargets {
		for _, path := range []string{"egress", "egress-gateway"} {
			for _, m := range []string{"throughput_gbps", "latency_p50_us", "connections_per_s"} {
				if measured[tg+" "+path+" "+m] <= 0 {
					t.Errorf("%s %s %s not measured: %v", tg, path, m, measured)
				}
			}
		}
	}
}

// checkBrokenGateway makes the client's node reach the gateway address directly, SNATing it
// itself: every egress-gateway sample must then fail its source proof, naming both addresses.
func checkBrokenGateway(ctx context.Context, t *testing.T, spec cluster.Spec, ext cluster.External, dir string) {
	p := spec.Plan()
	node1 := spec.NodeNetns(1)
	if out, err := runCmd(ctx, "ip", "-n", node1, "route", "del", ext.ViaGateway+"/32"); err != nil {
		t.Fatalf("remove the gateway route: %v\n%s", err, out)
	}
	if out, err := runCmd(ctx, "ip", "netns", "exec", node1, "nft", "add", "rule", "inet", "cnb_egress", "postrouting",
		"oifname", "eth0", "ip", "daddr", ext.ViaGateway, "masquerade"); err != nil {
		t.Fatalf("masquerade on the client's node: %v\n%s", err, out)
	}
	broken, brokenFile := filepath.Join(dir, "broken.db"), filepath.Join(dir, "broken.yaml")
	if err := os.WriteFile(brokenFile, []byte(brokenGatewaySuite), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ := cli(ctx, "run", "-f", brokenFile, "--results", broken, "-o", "json")
	_, samples := onlyRun(ctx, t, broken, "the broken gateway's run:\n"+out)
	want := "came from " + p.NodeIP(1).String() + ", expected " + p.NodeIP(2).String() + " (the gateway node2)"
	failed := 0
	for _, s := range samples {
		if s.Path != "egress-gateway" {
			continue
		}
		if !strings.Contains(s.Error, want) {
			t.Errorf("sample %d %s: error %q, want it to contain %q", s.Seq, s.Workload, s.Error, want)
		}
		failed++
	}
	if failed == 0 {
		t.Errorf("no egress-gateway samples stored:\n%s", out)
	}
}

// checkGateways measures the split through both implementations in one run and checks each
// target's figures, its fingerprint, and that Envoy Gateway removed the run's proxy after it.
func checkGateways(ctx context.Context, t *testing.T, c *kube.Client, dir string) {
	suiteFile, results := filepath.Join(dir, "gateways.yaml"), filepath.Join(dir, "gateways.db")
	if err := os.WriteFile(suiteFile, []byte(gatewaysSuite), 0o644); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	out, err := cli(ctx, "run", "-f", suiteFile, "--results", results, "-o", "json")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	t.Logf("the split through both gateways: %.1f s", time.Since(began).Seconds())
	doc := summaryOf(t, out, 2)
	for _, tg := range doc.Targets {
		want := map[string]string{"traefik": "traefik", "envoy": "envoy-gateway v1.9.1, envoy 1.39.1"}[tg.Name]
		if got := tg.Fingerprint["gateway"]; want == "" || !strings.HasPrefix(got, want) {
			t.Errorf("target %s: fingerprint gateway %q, want it to start with %q", tg.Name, got, want)
		}
	}
	for _, target := range []string{"traefik", "envoy"} {
		var rows []jsonRow
		for _, r := range doc.Rows {
			if r.Target == target {
				rows = append(rows, r)
			}
		}
		checkSplit(t, target, rows)
	}
	sel := metav1.ListOptions{LabelSelector: "gateway.envoyproxy.io/owning-gateway-name"}
	err = wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := c.CS.AppsV1().Deployments(lab.EnvoyGatewayNamespace).List(ctx, sel)
		return err == nil && len(l.Items) == 0, nil
	})
	if err != nil {
		t.Errorf("Envoy Gateway's proxy of the run is still there a minute after it: %v", err)
	}
}

// checkSplit wants a target's split measured at both levels: its accuracy within 2 points of
// the weight (Traefik's weighted round robin is exact over a window, Envoy's random choice
// about 0.6 points off at 5 000 requests), requests answered without errors, and the
// gateway's own CPU and memory.
func checkSplit(t *testing.T, target string, rows []jsonRow) {
	t.Helper()
	got := map[string]jsonRow{}
	for _, r := range rows {
		if r.Path == "gateway" {
			got[target+" "+r.Workload+" "+r.Metric] = r
		}
	}
	for _, w := range []string{"gateway-split/40%x1vu", "gateway-split/40%x100vu"} {
		w = target + " " + w
		if r, ok := got[w+" split_abs_error_pp"]; !ok || r.N != 2 || r.Mean < 0 || r.Mean > 2 {
			t.Errorf("%s split accuracy %+v (present %v), want 2 samples within 2 points", w, r, ok)
		}
		if r := got[w+" split_share_pct"]; r.Mean < 38 || r.Mean > 42 {
			t.Errorf("%s share of the first backend %.2f %%, want 40 ± 2", w, r.Mean)
		}
		if r := got[w+" requests_per_s"]; r.Mean <= 0 {
			t.Errorf("%s request rate %+v", w, r)
		}
		if r := got[w+" http_error_pct"]; r.Mean > 1 {
			t.Errorf("%s errors %.2f %%", w, r.Mean)
		}
		for _, m := range []string{"gateway_cpu_pct", "gateway_mem_mib", "latency_p99_us"} {
			if r := got[w+" "+m]; r.Mean <= 0 {
				t.Errorf("%s %s %+v, want a positive figure", w, m, r)
			}
		}
	}
}

// checkExternalToken asks the lab's external agent, from its own namespace, for the source
// address: over HTTPS trusting the cluster's CA and with the cluster's token it answers;
// without the token or with another it refuses; plain HTTP, which would carry the token in the
// clear, gets no answer.
func checkExternalToken(ctx context.Context, t *testing.T, spec cluster.Spec) {
	layout := cluster.DefaultLayout()
	token, err := external.ReadToken(layout.ExternalTokenFile(spec.Name))
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(layout.CAFile(spec.Name))
	if err != nil {
		t.Fatal(err)
	}
	server := net.JoinHostPort("127.0.0.1", strconv.Itoa(external.DefaultServePort))
	whoami := func(token string, ca []byte) (string, error) {
		argv := append([]string{"netns", "exec", spec.ExtNetns(), cnibenchBin}, agentcmd.WhoAmICmd{Server: server, Token: token, CA: string(ca)}.Argv()[1:]...)
		return runCmd(ctx, "ip", argv...)
	}
	if out, err := whoami(token, ca); err != nil || strings.TrimSpace(out) != "127.0.0.1" {
		t.Errorf("whoami with the cluster's token and CA: %q, %v", out, err)
	}
	for _, wrong := range []string{"", "not-the-token"} {
		if out, err := whoami(wrong, ca); err == nil || !strings.Contains(out, "401 Unauthorized") {
			t.Errorf("whoami with token %q: %q, %v; want a 401", wrong, out, err)
		}
	}
	if out, err := whoami(token, nil); err == nil || !strings.Contains(out, "400 Bad Request") {
		t.Errorf("whoami over plain HTTP: %q, %v; want the agent to refuse it (it serves HTTPS)", out, err)
	}
}
