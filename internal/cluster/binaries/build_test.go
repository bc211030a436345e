package binaries

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestEnsureBuildsCNIPlugins really builds the smallest component into a
// temporary cache (about 20 s with a warm module cache) and checks that a
// second Ensure does nothing.
func TestEnsureBuildsCNIPlugins(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c, comp, out := ensureInTempCache(ctx, t, CNIPlugins)
	if !strings.Contains(out.String(), "building cni-plugins "+CNIPluginsVersion) ||
		!strings.Contains(out.String(), "built cni-plugins "+CNIPluginsVersion+" in ") {
		t.Errorf("missing start/done lines in %q", out.String())
	}
	if err := c.Check(comp); err != nil {
		t.Fatalf("Check after Ensure: %v", err)
	}
	cmd := exec.CommandContext(ctx, c.Path("host-local"))
	cmd.Env = append(os.Environ(), "CNI_COMMAND=VERSION")
	if b, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(b), "cniVersion") {
		t.Errorf("host-local VERSION: %v: %s", err, b)
	}
	if _, err := os.Stat(c.LogPath(CNIPlugins)); err != nil {
		t.Errorf("no build log: %v", err)
	}

	out.Reset()
	start := time.Now()
	if err := c.Ensure(ctx, out, comp); err != nil {
		t.Fatalf("second Ensure: %v", err)
	}
	if !strings.Contains(out.String(), "up to date") || time.Since(start) > 5*time.Second {
		t.Errorf("second Ensure rebuilt or was slow (%s): %q", time.Since(start), out.String())
	}
}

// ensureInTempCache builds one component for real into a temporary cache and returns the
// cache, the component and what Ensure printed.
func ensureInTempCache(ctx context.Context, t *testing.T, name string) (Cache, Component, *bytes.Buffer) {
	t.Helper()
	if _, err := goTool(); err != nil {
		t.Skip(err)
	}
	comp, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	c := Cache{Dir: t.TempDir()}
	var out bytes.Buffer
	if err := c.Ensure(ctx, &out, comp); err != nil {
		t.Fatalf("Ensure: %v\noutput:\n%s", err, out.String())
	}
	t.Logf("Ensure %s:\n%s", name, out.String())
	return c, comp, &out
}
