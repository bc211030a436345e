//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/suite"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// testRemoteClusters runs one suite over two existing clusters reached only as a platform
// team would let a user reach two clusters of their own: by kubeconfigs of a user granted only
// what `cnibench rbac` prints for one namespace, each cluster pulling the tools image from its
// own registry (the clusters' lab registries, over TLS, with the namespace's pull Secret). Each
// target's CNI comes from its API alone, both are measured and ranked, neither cluster is
// deleted, and the audit logs show every change the user made inside the namespace, which is
// left empty, with everything outside it as it was. (A run over two remote targets used to
// panic in its teardown.)
func testRemoteClusters(ctx context.Context, t *testing.T, dps []string) {
	const ns, user = "cnb-remote", "cnb-remote-user"
	dir := t.TempDir()
	text := "targets:\n"
	workloads := map[string]*workload{}
	images := map[string]string{}
	marks := map[string]int64{}
	before := map[string][]string{}
	for _, dp := range dps {
		name := suite.ClusterNameFor(dp)
		w := newWorkload(ctx, t, name)
		workloads[dp] = w
		grantNamespace(ctx, t, w, dir, ns, user)
		images[dp] = pushToLabRegistry(ctx, t, w, name, ns)
		text += "  - {name: " + dp + ", kubeconfig: " + userKubeconfig(t, name, user, dir) + ", image: \"" + images[dp] + "\"}\n"
		marks[dp], before[dp] = auditMark(t, name), objectsOutside(ctx, t, w, ns)
	}
	text += "paths: [cross-node]\nworkloads: [{kind: tcp-rr, size: 64, tool: cnibench}]\nrepetitions: 2\nduration: 1s\nwarmup: off\n"
	suiteFile := filepath.Join(dir, "remote.yaml")
	if err := os.WriteFile(suiteFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr := runLogged(ctx, t, "-f", suiteFile, "--namespace", ns, "--image-pull-secret", labPullSecret,
		"--results", filepath.Join(dir, "results.db"), "-o", "json")
	var doc struct {
		Run     struct{ Status string }
		Targets []struct {
			Name        string
			Fingerprint map[string]string
		}
		Rows []jsonRow
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("json: %v\n%s", err, stdout)
	}
	if doc.Run.Status != "complete" || len(doc.Targets) != len(dps) {
		t.Fatalf("status %q, %d targets, want complete and %d", doc.Run.Status, len(doc.Targets), len(dps))
	}
	// What the user's permissions let the run see must be what the clusters are.
	for _, tg := range doc.Targets {
		fp, want := tg.Fingerprint, detectedCNI[tg.Name]
		if fp["cni"] != want[0] || fp["cni_mode"] != want[1] || !strings.HasPrefix(fp["cluster"], "context ") {
			t.Errorf("target %s: cni %q %q (want %q %q from the API), cluster %q", tg.Name, fp["cni"], fp["cni_mode"], want[0], want[1], fp["cluster"])
		}
		if proxy := lab.DefaultProxyMode(tg.Name); fp["kube_proxy_mode"] != proxy {
			t.Errorf("target %s: kube-proxy mode %q, want %q", tg.Name, fp["kube_proxy_mode"], proxy)
		}
		if !strings.HasPrefix(fp["node_a_runtime"], "containerd://") {
			t.Errorf("target %s: node runtime %q, want containerd's", tg.Name, fp["node_a_runtime"])
		}
	}
	measured := map[string]bool{}
	for _, r := range doc.Rows {
		if r.Path == "cross-node" && r.Metric == "latency_p50_us" && r.N == 2 && r.Mean > 0 {
			measured[r.Target] = true
		}
	}
	for _, dp := range dps {
		if !measured[dp] {
			t.Errorf("no cross-node latency of %s: %+v", dp, doc.Rows)
		}
		name, w := suite.ClusterNameFor(dp), workloads[dp]
		if strings.Contains(stderr, "deleting local cluster "+name) {
			t.Errorf("a remote run deleted cluster %s", name)
		}
		checkPulled(ctx, t, w, ns, images[dp])
		if n := checkAuditedWithin(t, name, marks[dp], user, ns); n < 10 {
			t.Errorf("%s: the audit log holds %d changes by the run's user in %s: too few for a run", name, n, ns)
		}
		if after := objectsOutside(ctx, t, w, ns); !slices.Equal(before[dp], after) {
			t.Errorf("%s: objects outside %s changed:\nbefore %v\nafter  %v", name, ns, before[dp], after)
		}
		pods, err := w.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(pods.Items) != 0 {
			t.Errorf("%s: pods left in %s: %d, %v", name, ns, len(pods.Items), err)
		}
	}
}
