//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/internal/kube"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRunMeasuresNetworkPolicyVariants runs the shipped NetworkPolicy suite briefly with two
// variants, each on its own Cilium cluster: no policy, and the allow policy plus 100 unrelated
// ones. While it measures, the policies must exist and Cilium must enforce ingress on the
// server of the allow variant only; afterwards the results carry the variant and the host is
// clean.
func TestRunMeasuresNetworkPolicyVariants(t *testing.T) {
	before := snapshot(t)
	const none, allow = "civxlan-p0", "civxlan-p1"
	defer forceDelete(none)
	defer forceDelete(allow)
	dir := t.TempDir()
	run := startCLI(t, "run", "-f", "../../examples/network-policy.yaml", "--datapaths", "cilium-vxlan",
		"--network-policies", "none,allow+100", "--repetitions", "2", "--duration", "1s", "--warmup", "off",
		"--store", filepath.Join(dir, "results.db"), "-o", "json")
	if !run.waitLine(t, "NetworkPolicy enforced", 12*time.Minute) {
		t.Fatalf("run ended before enforcing the policy:\n%s", run.output())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for name, want := range map[string]struct {
		policies    int
		enforcement string
	}{none: {0, "Disabled"}, allow: {101, "Enabled"}} {
		c, err := kube.Connect(cluster.DefaultLayout().Kubeconfig(name), "")
		if err != nil {
			t.Fatal(err)
		}
		sel := metav1.ListOptions{LabelSelector: kube.LabelManagedBy + "=cnibench"}
		nps, err := c.CS.NetworkingV1().NetworkPolicies("").List(ctx, sel)
		if err != nil {
			t.Fatalf("%s: list policies: %v", name, err)
		}
		if len(nps.Items) != want.policies {
			t.Errorf("%s: %d NetworkPolicies during the run, want %d", name, len(nps.Items), want.policies)
		}
		pods, err := c.CS.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: kube.LabelRole + "=" + kube.RoleServerB})
		if err != nil || len(pods.Items) != 1 {
			t.Fatalf("%s: server-b pods: %v (%d)", name, err, len(pods.Items))
		}
		if got := ingressEnforcement(ctx, t, name, pods.Items[0].Status.PodIP); got != want.enforcement {
			t.Errorf("%s: Cilium ingress enforcement on server-b %s, want %s", name, got, want.enforcement)
		}
	}
	if err := run.wait(t, 15*time.Minute); err != nil {
		t.Fatalf("run: %v\n%s", err, run.output())
	}
	t.Logf("output:\n%s", run.output())
	checkPolicyResults(t, run.output())
	assertClean(t, before)
}

// ingressEnforcement reads the ingress enforcement column of the endpoint with ip from the
// agent on node2, where server-b runs.
func ingressEnforcement(ctx context.Context, t *testing.T, clusterName, ip string) string {
	t.Helper()
	out := ciliumDbg(ctx, t, cluster.DefaultLayout().Dir(clusterName), 2, "endpoint", "list")
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 2 && strings.Contains(line, ip) {
			return f[1]
		}
	}
	t.Fatalf("%s: no endpoint with %s:\n%s", clusterName, ip, out)
	return ""
}

// checkPolicyResults finds the run's JSON summary in the combined output and checks that both
// variants were measured and say which variant they are.
func checkPolicyResults(t *testing.T, output string) {
	t.Helper()
	doc := summaryOf(t, output, 2)
	for _, tg := range doc.Targets {
		variant := strings.TrimPrefix(tg.Name, "cilium-vxlan.")
		if tg.Fingerprint["network_policy"] != variant {
			t.Errorf("target %s: fingerprint network_policy %q, want %q", tg.Name, tg.Fingerprint["network_policy"], variant)
		}
	}
	measured := map[string]bool{}
	for _, r := range doc.Rows {
		if r.N == 2 && r.Mean > 0 && (r.Metric == "throughput_gbps" || r.Metric == "latency_p50_us") {
			measured[r.Target+" "+r.Path+" "+r.Metric] = true
		}
	}
	if len(measured) != 2*2*2 {
		t.Errorf("want throughput and p50 latency on both paths of both variants, got %v", measured)
	}
	// The allow policy's enforcement latency, timed by probes every 10 ms, exists for the
	// variant that has it and only there; the Service's programming latency for both.
	enforced := map[string]float64{}
	services := 0
	for _, r := range doc.Rows {
		switch r.Metric {
		case "netpol_enforced_ms":
			enforced[r.Target] = r.Mean
		case "service_ready_ms":
			if r.Mean > 0 {
				services++
			}
		}
	}
	if ms, ok := enforced["cilium-vxlan.allow+100"]; !ok || ms <= 0 || ms > 180000 || len(enforced) != 1 {
		t.Errorf("NetworkPolicy enforcement latency %v, want one positive figure for allow+100", enforced)
	}
	if services != 2 {
		t.Errorf("Service programming latency on %d of 2 targets", services)
	}
}

// summaryDoc is the part of a run's JSON summary the tests read.
type summaryDoc struct {
	Run     struct{ Status string }
	Targets []struct {
		Name        string
		Fingerprint map[string]string
	}
	Rows []jsonRow
	// Reference is the study's figures beside the run's, for a suite that names one.
	Reference struct {
		Rows []struct {
			Target, Metric, Workload string
			Pairs                    int
			PerPair                  bool `json:"per_pair"`
			Study, Ours              float64
			Measured                 bool
		}
	}
}

// summaryOf finds a complete run's JSON summary with the given number of targets in the
// combined output of `run -o json`.
func summaryOf(t *testing.T, output string, targets int) summaryDoc {
	t.Helper()
	start := strings.Index(output, "\n{") + 1 // progress lines start with "["
	var doc summaryDoc
	if start == 0 || json.NewDecoder(strings.NewReader(output[start:])).Decode(&doc) != nil {
		t.Fatalf("no JSON summary in the output:\n%s", output)
	}
	if doc.Run.Status != "complete" || len(doc.Targets) != targets {
		t.Fatalf("status %q, %d targets, want complete with %d", doc.Run.Status, len(doc.Targets), targets)
	}
	return doc
}
