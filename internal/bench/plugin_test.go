package bench

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/suite"
)

// TestCurrentContextTarget checks the kubectl plugin's default target: the kubeconfig's
// current context where nothing names a target, the named target otherwise, and one error
// where the kubeconfig has no current context.
func TestCurrentContextTarget(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "config")
	write := func(current string) {
		cfg := "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n" +
			"users: [{name: u, user: {token: x}}]\ncontexts: [{name: team-prod, context: {cluster: c, user: u}}]\ncurrent-context: '" + current + "'\n"
		if err := os.WriteFile(kubeconfig, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("KUBECONFIG", kubeconfig)
	plan := func(o suite.Overrides) (string, error) {
		var out bytes.Buffer
		err := Run(context.Background(), Options{CurrentContext: true, DryRun: true, Output: "table", Overrides: o, Stdout: &out})
		return out.String(), err
	}
	write("team-prod")
	if out, err := plan(suite.Overrides{}); err != nil || !strings.Contains(out, " team-prod ") {
		t.Errorf("current context: %v\n%s", err, out)
	}
	if out, err := plan(suite.Overrides{LocalCluster: "mine"}); err != nil || strings.Contains(out, "team-prod") || !strings.Contains(out, " local ") {
		t.Errorf("--cluster names the local cluster: %v\n%s", err, out)
	}
	write("")
	if _, err := plan(suite.Overrides{}); err == nil || !strings.Contains(err.Error(), "has no current context: name a cluster with --context") {
		t.Errorf("no current context: %v", err)
	}
}
