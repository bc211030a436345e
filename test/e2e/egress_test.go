//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/store"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const egressCluster = "egr"

// egressSuite measures a pod to the external host directly and through the gateway node.
const egressSuite = `
targets:
  - name: bridge
    local: {cluster: egr, datapath: bridge}
paths: [egress, egress-gateway]
workloads:
  - {kind: tcp-stream, streams: 1}
  - {kind: tcp-rr, size: 64}
  - {kind: tcp-crr, size: 64}
repetitions: 2
duration: 2s
warmup: 1s
`

// TestEgressDirectAndThroughGateway creates a cluster with its external host, measures both
// egress paths with the source address proved before every sample, then breaks the gateway
// (the client's node sends the gateway's traffic out itself, SNATed to its own address) and
// expects every egress-gateway sample to fail on the proof. The external namespace goes with
// the cluster.
func TestEgressDirectAndThroughGateway(t *testing.T) {
	before := snapshot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	defer forceDelete(egressCluster)
	createCluster(ctx, t, "--name", egressCluster)
	spec, err := cluster.DefaultLayout().ReadSpec(egressCluster)
	if err != nil {
		t.Fatal(err)
	}
	ext, ok := spec.External()
	if !ok || ext.GatewayNode != "node2" {
		t.Fatalf("external host %+v, %v; want one with gateway node2", ext, ok)
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
	suiteFile, results := filepath.Join(dir, "suite.yaml"), filepath.Join(dir, "results.db")
	if err := os.WriteFile(suiteFile, []byte(egressSuite), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := cli(ctx, "run", "-f", suiteFile, "--results", results, "-o", "json")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	doc := summaryOf(t, out, 1)
	p := spec.Plan()
	if got, want := doc.Targets[0].Fingerprint["egress_gateway"], "node2 (SNAT to "+p.NodeIP(2).String()+")"; got != want {
		t.Errorf("fingerprint egress_gateway %q, want %q", got, want)
	}
	measured := map[string]float64{}
	for _, r := range doc.Rows {
		if r.N == 2 && (r.Metric == "throughput_gbps" || r.Metric == "latency_p50_us" || r.Metric == "connections_per_s") {
			measured[r.Path+" "+r.Metric] = r.Mean
		}
	}
	for _, path := range []string{"egress", "egress-gateway"} {
		for _, m := range []string{"throughput_gbps", "latency_p50_us", "connections_per_s"} {
			if measured[path+" "+m] <= 0 {
				t.Errorf("%s %s not measured: %v", path, m, measured)
			}
		}
	}

	// The client's node now reaches the gateway address directly and SNATs it itself: the
	// samples must notice that the gateway is not on the path.
	node1 := spec.NodeNetns(1)
	if out, err := runCmd(ctx, "ip", "-n", node1, "route", "del", ext.ViaGateway+"/32"); err != nil {
		t.Fatalf("remove the gateway route: %v\n%s", err, out)
	}
	if out, err := runCmd(ctx, "ip", "netns", "exec", node1, "nft", "add", "rule", "ip", "cnb_egress", "postrouting",
		"oifname", "eth0", "ip", "daddr", ext.ViaGateway, "masquerade"); err != nil {
		t.Fatalf("masquerade on the client's node: %v\n%s", err, out)
	}
	broken := filepath.Join(dir, "broken.db")
	out, _ = cli(ctx, "run", "-f", suiteFile, "--paths", "egress-gateway", "--results", broken, "-o", "json")
	db, err := store.Open(ctx, broken)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	runs, err := db.Runs(ctx)
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs of the broken gateway: %v, %d\n%s", err, len(runs), out)
	}
	samples, err := db.Samples(ctx, runs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
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
	deleteCluster(ctx, t, egressCluster)
	if _, err := os.Stat("/run/netns/" + spec.ExtNetns()); !os.IsNotExist(err) {
		t.Errorf("external namespace %s still there after delete (%v)", spec.ExtNetns(), err)
	}
	assertClean(t, before)
}
