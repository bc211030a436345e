//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/internal/suite"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// testRemoteClusters runs one suite over two existing clusters reached only by their
// kubeconfigs, as a user measures two clusters of their own: each target's CNI comes from its
// API alone, both are measured and ranked, neither cluster is deleted, and nothing of the run
// is left in either. (A run over two remote targets used to panic in its teardown.)
func testRemoteClusters(ctx context.Context, t *testing.T, dps []string) {
	dir := t.TempDir()
	text := "targets:\n"
	image := ""
	for _, dp := range dps {
		name := suite.ClusterNameFor(dp)
		text += "  - {name: " + dp + ", kubeconfig: " + cluster.DefaultLayout().Kubeconfig(name) + "}\n"
		// The clusters' nodes hold the tools image their creates built: the same image, as the
		// same cnibench built it, which --image names for every remote target.
		if tools := readSpec(t, name).Images.Tools; image == "" || tools == image {
			image = tools
		} else {
			t.Fatalf("the clusters hold different tools images: %s and %s", image, tools)
		}
	}
	text += "paths: [cross-node]\nworkloads: [{kind: tcp-rr, size: 64, tool: cnibench}]\nrepetitions: 2\nduration: 1s\nwarmup: off\n"
	suiteFile := filepath.Join(dir, "remote.yaml")
	if err := os.WriteFile(suiteFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr := runLogged(ctx, t, "-f", suiteFile, "--image", image, "--results", filepath.Join(dir, "results.db"), "-o", "json")
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
	for _, tg := range doc.Targets {
		if want := detectedCNI[tg.Name][0]; tg.Fingerprint["cni"] != want || !strings.HasPrefix(tg.Fingerprint["cluster"], "context ") {
			t.Errorf("target %s: cni %q (want %q from the API), cluster %q", tg.Name, tg.Fingerprint["cni"], want, tg.Fingerprint["cluster"])
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
		name := suite.ClusterNameFor(dp)
		if strings.Contains(stderr, "deleting local cluster "+name) {
			t.Errorf("a remote run deleted cluster %s", name)
		}
		w := newWorkload(ctx, t, name)
		nss, err := w.cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, ns := range nss.Items {
			if strings.HasPrefix(ns.Name, "cnibench-") {
				t.Errorf("%s: namespace %s (%s) survived the run", name, ns.Name, ns.Status.Phase)
			}
		}
	}
}
