//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/cluster/binaries"
	"github.com/cnibench/cnibench/internal/lab"
)

// TestKubectlPlugin runs cnibench as kubectl runs a plugin: the real kubectl finds
// kubectl-cnibench on PATH, the help speaks of `kubectl cnibench`, and a run's default target
// is the current context of the kubeconfig kubectl reads (its plan names it).
func TestKubectlPlugin(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	if err := os.Symlink(cnibenchBin, filepath.Join(dir, "kubectl-cnibench")); err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(dir, "config")
	cfg := "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n" +
		"users: [{name: u, user: {token: x}}]\ncontexts: [{name: team-prod, context: {cluster: c, user: u}}]\ncurrent-context: team-prod\n"
	if err := os.WriteFile(kubeconfig, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	kubectl := func(args ...string) string {
		cmd := exec.CommandContext(ctx, binaries.Default().KubectlPath(lab.DefaultKubernetesVersion), args...)
		cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), "KUBECONFIG="+kubeconfig)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if out := kubectl("plugin", "list"); !strings.Contains(out, filepath.Join(dir, "kubectl-cnibench")) {
		t.Errorf("kubectl plugin list does not show the plugin:\n%s", out)
	}
	if out := kubectl("cnibench", "run", "--help"); !strings.Contains(out, "kubectl cnibench run [flags]") {
		t.Errorf("help as a plugin:\n%s", out)
	}
	if out := kubectl("cnibench", "run", "--dry-run", "--paths", "cross-node"); !strings.Contains(out, " team-prod ") {
		t.Errorf("the plan's target is not the current context:\n%s", out)
	}
}
