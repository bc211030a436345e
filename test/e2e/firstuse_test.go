//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/cluster/binaries"
)

// TestCreateBuildsOnFirstUse gives create a cache that lacks one component the cluster runs
// (the CNI plugins, the cheapest build): create must build it from the module proxy, with
// progress lines, and then run the cluster. The cache is a hard-linked copy of the real one,
// so nothing else is rebuilt and the real cache is not touched.
func TestCreateBuildsOnFirstUse(t *testing.T) {
	const name = "cnbfirst"
	before := snapshot(t)
	defer forceDelete(name)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	real := binaries.Default()
	cache := t.TempDir()
	for _, dir := range []string{"bin", "images"} {
		if out, err := runCmd(ctx, "cp", "-al", filepath.Join(real.Dir, dir), filepath.Join(cache, dir)); err != nil {
			t.Fatalf("copy the cache: %v\n%s", err, out)
		}
	}
	cni, err := binaries.Lookup(binaries.CNIPlugins)
	if err != nil {
		t.Fatal(err)
	}
	// Removing the stamp and one binary makes the component missing, as on a fresh machine.
	if err := os.Remove(filepath.Join(cache, "bin", ".stamps", binaries.CNIPlugins)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(cache, "bin", "bridge")); err != nil {
		t.Fatal(err)
	}

	env := []string{"CNIBENCH_CACHE=" + cache}
	out, err := cliEnv(ctx, env, "cluster", "create", "--name", name)
	if err != nil {
		t.Fatalf("create: %v\n%s", err, out)
	}
	for _, want := range []string{"on first use", "building " + binaries.CNIPlugins + " " + cni.Version, "built " + binaries.CNIPlugins, "is ready"} {
		if !strings.Contains(out, want) {
			t.Errorf("create output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "building "+binaries.Kubernetes) {
		t.Errorf("create rebuilt Kubernetes, which the cache had:\n%s", out)
	}
	if err := (binaries.Cache{Dir: cache}).Check(cni); err != nil {
		t.Errorf("after create: %v", err)
	}
	if out, err := cliEnv(ctx, env, "cluster", "delete", "--name", name); err != nil {
		t.Fatalf("delete: %v\n%s", err, out)
	}
	assertClean(t, before)
}
