//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/runner"
	"github.com/cnibench/cnibench/internal/suite"
)

// testInterleaved measures a family of datapaths side by side on the clusters TestDatapaths
// created, the way issues 5 and 12 asked: samples interleaved round by round, a ranking in
// the summary, each target's fingerprint naming its CNI, and the clusters, which the run did
// not create, left as they were. Its request/response workload uses the in-house engine:
// sockperf sleeps 2 s before every sample whatever its length (TestRunOnLocalCluster runs
// sockperf on every path and checks the two engines agree).
func testInterleaved(ctx context.Context, t *testing.T, dps []string) {
	dir := t.TempDir()
	suiteFile := filepath.Join(dir, "suite.yaml")
	text := `
paths: [cross-node]
workloads:
  - {kind: tcp-stream, streams: 1}
  - {kind: tcp-rr, size: 64, tool: cnibench}
repetitions: 2
duration: 1s
warmup: off
`
	// The first reference study's cross-node throughput, set beside this run's.
	study := slices.Contains(dps, "flannel-vxlan") && slices.Contains(dps, "cilium-vxlan")
	if study {
		// The file stands on its own: it names the targets its figures are of (--datapaths
		// then replaces them with the family's, which keeps these two).
		text += `targets:
  - {name: flannel-vxlan, local: {cluster: flvxlan, datapath: flannel-vxlan}}
  - {name: cilium-vxlan, local: {cluster: civxlan, datapath: cilium-vxlan}}
reference:
  study: "Flannel vs Cilium under Multus (journal paper)"
  figures:
    - {target: flannel-vxlan, path: cross-node, workload: tcp-stream/1, metric: throughput_gbps, value: 1.48}
    - {target: cilium-vxlan, path: cross-node, workload: tcp-stream/1, metric: throughput_gbps, value: 1.53}
`
	}
	if err := os.WriteFile(suiteFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	results := filepath.Join(dir, "results.db")
	args := []string{"-f", suiteFile, "--datapaths", strings.Join(dps, ","), "--results", results, "-o", "json"}
	if study {
		// Where the CPU goes, on the family with encapsulating and routed datapaths.
		args = append(args, "--profile")
	}
	stdout, stderr := runLogged(ctx, t, args...)
	var doc struct {
		Run     struct{ Status string }
		Targets []struct {
			Name        string
			Fingerprint map[string]string
		}
		Ranking []struct {
			Path, Workload, Metric string
			Entries                []struct{ Target, Verdict string }
		}
		Rows      []jsonRow
		Profiles  []jsonProfile
		Reference struct {
			Rows []struct {
				Target, Direction string
				Study, Ours       float64
				N                 int
				Measured          bool
			}
		}
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("json: %v\n%s", err, stdout)
	}
	if study {
		checkProfiles(ctx, t, results, dps, doc.Profiles)
		// A direction needs two samples of each target: a sample that failed its three tries
		// leaves one, and no comparison to make.
		if rows := doc.Reference.Rows; len(rows) != 2 || !rows[0].Measured || rows[0].Ours <= 0 || rows[1].Ours <= 0 ||
			(rows[0].Direction != "") != (rows[0].N >= 2 && rows[1].N >= 2) {
			t.Errorf("the study's figures beside the run's: %+v", doc.Reference)
		}
	}
	if doc.Run.Status != "complete" || len(doc.Targets) != len(dps) {
		t.Fatalf("status %q, %d targets", doc.Run.Status, len(doc.Targets))
	}
	for _, tg := range doc.Targets {
		if want := strings.SplitN(tg.Name, "-", 2)[0]; tg.Fingerprint["cni"] != want || tg.Fingerprint["datapath"] != tg.Name {
			t.Errorf("target %s: cni %q, datapath %q", tg.Name, tg.Fingerprint["cni"], tg.Fingerprint["datapath"])
		}
		// What a comparison between deployments turns on is recorded per CNI.
		key := map[string]string{"calico": "calico_dataplane", "canal": "calico_dataplane", "cilium": "cilium_kube_proxy_replacement"}[tg.Fingerprint["cni"]]
		if key != "" && tg.Fingerprint[key] == "" {
			t.Errorf("target %s: fingerprint lacks %s: %v", tg.Name, key, tg.Fingerprint)
		}
		checkMTU(t, tg.Name, tg.Fingerprint)
		checkProbedNodes(t, tg.Name, tg.Fingerprint)
	}
	// Every datapath's Service programming latency is measured: Cilium's socket load balancer
	// answers a ClusterIP without endpoints with "no route to host", which is "not yet", as a
	// refused connection is for kube-proxy.
	serviceTimed := map[string]bool{}
	for _, r := range doc.Rows {
		if r.Metric == "service_ready_ms" && r.Mean >= 0 && r.N > 0 {
			serviceTimed[r.Target] = true
		}
	}
	for _, dp := range dps {
		if !serviceTimed[dp] {
			t.Errorf("no Service programming latency for %s:\n%s", dp, stderr)
		}
	}
	ranked := false
	for _, g := range doc.Ranking {
		if g.Metric == "throughput_gbps" && g.Path == "cross-node" {
			ranked = len(g.Entries) == len(dps) && g.Entries[0].Verdict == "best"
		}
	}
	if !ranked {
		t.Errorf("no ranking of all %d datapaths on cross-node throughput: %+v", len(dps), doc.Ranking)
	}
	// Interleaving: the measured samples of one round visit every datapath before the next round.
	rounds := map[string][]string{}
	progress := regexp.MustCompile(`^\[\s*\d+/\d+\] round (\d+)/\d+\s+(\S+)`)
	for _, line := range strings.Split(stderr, "\n") {
		if m := progress.FindStringSubmatch(line); m != nil {
			rounds[m[1]] = append(rounds[m[1]], m[2])
		}
	}
	for round, targets := range rounds {
		seen := map[string]bool{}
		for _, tg := range targets {
			seen[tg] = true
		}
		if len(seen) != len(dps) {
			t.Errorf("round %s visits %v, not every datapath", round, targets)
		}
	}
	if len(rounds) != 2 {
		t.Errorf("%d measured rounds in the progress, want 2", len(rounds))
	}
	for _, dp := range dps {
		if !strings.Contains(stderr, "using local cluster "+suite.ClusterNameFor(dp)) {
			t.Errorf("the run did not use the existing cluster of %s:\n%s", dp, stderr)
		}
		if strings.Contains(stderr, "deleting local cluster "+suite.ClusterNameFor(dp)) {
			t.Errorf("the run deleted %s's cluster, which it did not create", dp)
		}
	}
}

// The A/A test's bridge clusters, which its run creates and deletes.
const (
	twinCluster  = "e2etwin"
	twinClusterB = "e2etwinb"
)

// testAA measures two identical bridge clusters side by side, both created by the run:
// identical configurations must not come out different beyond doubt. The verdict compares them
// round by round (every round measured both), and no headline comparison may be decisive
// (adjusted p below runner.DecisiveP, the level at which a run stops as "different beyond
// doubt"), which a real difference between the clusters or intervals far too narrow would
// reach. A verdict at the 5 % level is not a failure: between identical targets a calibrated
// test gives one in about one run in twenty per comparison (one came at p = 0.045, x1.32 on
// tcp-rr's noise), which the unit panel's thousands of simulated runs measure, not one run
// here. `compare --fail-on worse --tolerance 10%` must exit non-zero exactly when its table
// calls a headline worse by more than 10 %. Both clusters are new and alone on the host: the
// family's bridge cluster, used for ten minutes beside four other clusters, measured
// request/response 1.5 times faster than a twin the run created, in all five rounds; a
// 4-minute-old cluster beside two new ones with no other cluster alive did not (x1.20 and
// x1.15 n.s.). The cause is not found.
func testAA(ctx context.Context, t *testing.T) {
	defer forceDelete(twinCluster)
	defer forceDelete(twinClusterB)
	dir := t.TempDir()
	suiteFile, results := filepath.Join(dir, "aa.yaml"), filepath.Join(dir, "results.db")
	if err := os.WriteFile(suiteFile, []byte(`
targets:
  - {name: bridge, local: {cluster: `+twinClusterB+`}}
  - {name: twin, local: {cluster: `+twinCluster+`}}
paths: [cross-node]
workloads:
  - {kind: tcp-stream, streams: 1}
  - {kind: tcp-rr, size: 64, tool: cnibench}
repetitions: 5
duration: 1s
warmup: 1s
precision: off
`), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr := runLogged(ctx, t, "-f", suiteFile, "--results", results, "-o", "json")
	var doc struct {
		Run     struct{ ID string }
		Verdict []struct {
			Path, Workload, Metric string
			Entries                []struct {
				Target, Verdict string
				RatioToBest     float64 `json:"ratio_to_best"`
				PValue          float64 `json:"p_value"`
				Paired          bool
			}
		}
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("json: %v\n%s", err, stdout)
	}
	compared := 0
	for _, l := range doc.Verdict {
		if l.Path != "cross-node" {
			continue // the setup figures, one per target
		}
		for _, e := range l.Entries {
			if e.Verdict == "reference" {
				continue
			}
			compared++
			t.Logf("%s %s: %s x%.3f %s (adjusted p %.3g), paired %v", l.Workload, l.Metric, e.Target, e.RatioToBest, e.Verdict, e.PValue, e.Paired)
			if !e.Paired {
				t.Errorf("%s %s: %s compared unpaired, though every round measured both", l.Workload, l.Metric, e.Target)
			}
			if (e.Verdict == "better" || e.Verdict == "worse") && e.PValue < runner.DecisiveP {
				t.Errorf("%s %s: identical clusters, one %s beyond doubt: x%.3f, adjusted p %.3g", l.Workload, l.Metric, e.Verdict, e.RatioToBest, e.PValue)
			}
		}
	}
	if compared != 2 {
		t.Errorf("%d verdict comparisons between the twins, want tcp-stream's and tcp-rr's headline: %+v", compared, doc.Verdict)
	}
	checkGateAgrees(ctx, t, doc.Run.ID+"/bridge", doc.Run.ID+"/twin", results)
	for _, c := range []string{twinCluster, twinClusterB} {
		if !strings.Contains(stderr, "deleting local cluster "+c) {
			t.Errorf("the run did not delete the twin %s it created:\n%s", c, stderr)
		}
	}
}

// checkGateAgrees runs `compare --fail-on worse --tolerance 10%` between two targets and checks
// that its exit status is the outcome its own JSON states (0 pass, 1 fail, 3 inconclusive), that
// it fails exactly where a gated row failed, that it paired their rounds, and that the table
// says the same outcome first.
func checkGateAgrees(ctx context.Context, t *testing.T, a, b, results string) {
	t.Helper()
	out, gateErr := cli(ctx, "compare", a, b, "--store", results, "--fail-on", "worse", "--tolerance", "10%")
	if !strings.Contains(out, " paired") {
		t.Errorf("compare did not pair the rounds:\n%s", out)
	}
	stdout, stderr, _ := cliSplit(ctx, "compare", a, b, "--store", results, "-o", "json", "--fail-on", "worse", "--tolerance", "10%")
	var doc struct {
		Gate struct {
			Outcome string
			Rows    []struct {
				Metric string
				Failed bool
			}
		}
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("compare json: %v\n%s\n%s", err, stdout, stderr)
	}
	failed := false
	for _, r := range doc.Gate.Rows {
		failed = failed || r.Failed
	}
	status := 0
	var exit *exec.ExitError
	if errors.As(gateErr, &exit) {
		status = exit.ExitCode()
	}
	want := map[string]int{"pass": 0, "fail": 1, "inconclusive": 3}[doc.Gate.Outcome]
	if status != want || failed != (doc.Gate.Outcome == "fail") || !strings.Contains(out, "gate: ") {
		t.Errorf("the gate's outcome %q (a row failed: %v) and its exit status %d disagree:\n%s", doc.Gate.Outcome, failed, status, out)
	}
	t.Logf("gate between %s and %s: %s", a, b, doc.Gate.Outcome)
}
