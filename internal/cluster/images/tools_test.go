package images

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestTools builds the real tools image. It runs wherever the project runs
// (as root, the way CI runs) and takes about a minute, most of it
// mmdebstrap fetching packages from the Debian mirror.
func TestTools(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Debian root filesystem (~1 min); skipped with -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("mmdebstrap needs root")
	}
	if _, err := exec.LookPath("mmdebstrap"); err != nil {
		t.Fatalf("running as root but mmdebstrap is missing (scripts/setup.sh installs it): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	b := Builder{CacheDir: filepath.Join(dir, "cache"), Progress: &progress}

	start := time.Now()
	img, err := b.Tools(ctx, self)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("first build %s:\n%s", time.Since(start).Round(time.Millisecond), progress.String())
	v := readImage(t, img)
	cf, err := v.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cf.Config.Cmd, []string{"sleep", "infinity"}) {
		t.Errorf("cmd %q", cf.Config.Cmd)
	}
	layers, err := v.Layers()
	if err != nil || len(layers) != 2 {
		t.Fatalf("%d layers, %v; want 2", len(layers), err)
	}
	root := layerFiles(t, layers[0])
	for _, want := range [][]string{
		{"usr/bin/iperf3"}, {"usr/bin/sockperf"}, {"usr/bin/sleep"},
		{"usr/bin/netperf"}, {"usr/bin/netserver"}, // from non-free, pinned to netperf alone
		{"etc/apt/preferences.d/cnibench-non-free"},
		{"usr/bin/ip", "usr/sbin/ip", "bin/ip", "sbin/ip"},
	} {
		found := false
		for _, p := range want {
			found = found || root[p] != nil
		}
		if !found {
			t.Errorf("root filesystem lacks %s", strings.Join(want, " or "))
		}
	}
	for _, p := range []string{"usr/share/man/man1/ip.8.gz", "usr/share/locale/de/LC_MESSAGES/procps-ng.mo"} {
		if root[p] != nil {
			t.Errorf("root filesystem holds excluded %s", p)
		}
	}
	top := layerFiles(t, layers[1])
	h := top["usr/local/bin/cnibench"]
	if h == nil {
		t.Fatalf("top layer lacks usr/local/bin/cnibench: %v", top)
	}
	if h.Mode != 0o755 || h.Uid != 0 || h.Gid != 0 {
		t.Errorf("cnibench: mode %o uid %d gid %d", h.Mode, h.Uid, h.Gid)
	}
	rootSize, _ := layers[0].Size()
	st, err := os.Stat(img.Archive)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("image %s: archive %s, root filesystem layer %s compressed, %d entries",
		img.Ref, mib(st.Size()), mib(rootSize), len(root))

	// Same binary: the archive is reused as is.
	again, err := b.Tools(ctx, self)
	if err != nil || again != img {
		t.Fatalf("second build: %+v, %v; want %+v", again, err, img)
	}

	// A new cnibench binary rebuilds the top layer only.
	other := filepath.Join(dir, "cnibench")
	if err := os.WriteFile(other, []byte("another build"), 0o755); err != nil {
		t.Fatal(err)
	}
	progress.Reset()
	start = time.Now()
	next, err := b.Tools(ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("rebuild with another binary %s: %s", time.Since(start).Round(time.Millisecond), strings.TrimSpace(progress.String()))
	if next.Ref == img.Ref {
		t.Errorf("new binary kept tag %s", img.Ref)
	}
	if strings.Contains(progress.String(), "mmdebstrap") {
		t.Errorf("new binary rebuilt the root filesystem")
	}
	nextLayers, err := readImage(t, next).Layers()
	if err != nil {
		t.Fatal(err)
	}
	d0, _ := layers[0].Digest()
	d1, _ := nextLayers[0].Digest()
	if d0 != d1 {
		t.Errorf("root filesystem layer changed: %s -> %s", d0, d1)
	}

	// An extra binary lands beside cnibench and changes the tag.
	extra := filepath.Join(dir, "k6")
	if err := os.WriteFile(extra, []byte("k6 stand-in"), 0o755); err != nil {
		t.Fatal(err)
	}
	withExtra, err := b.Tools(ctx, other, extra)
	if err != nil {
		t.Fatal(err)
	}
	if withExtra.Ref == next.Ref {
		t.Errorf("an extra binary kept tag %s", next.Ref)
	}
	extraLayers, err := readImage(t, withExtra).Layers()
	if err != nil {
		t.Fatal(err)
	}
	if top := layerFiles(t, extraLayers[len(extraLayers)-1]); top["usr/local/bin/k6"] == nil || top["usr/local/bin/cnibench"] == nil {
		t.Errorf("top layer lacks k6 or cnibench: %d entries", len(top))
	}
}
