package binaries

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

const fakeFlannelMain = `package main

import (
	"fmt"

	"github.com/flannel-io/flannel/pkg/backend"
	_ "github.com/flannel-io/flannel/pkg/backend/hostgw"
	_ "github.com/flannel-io/flannel/pkg/backend/tencentvpc"
	_ "github.com/flannel-io/flannel/pkg/backend/udp"
	_ "github.com/flannel-io/flannel/pkg/backend/vxlan"
)

func main() { fmt.Println(backend.X) }
`

func TestFlannelComponent(t *testing.T) {
	c, err := Lookup(Flannel)
	if err != nil {
		t.Fatal(err)
	}
	if c.Version != FlannelVersion || c.recipe.name != flannelRecipe().name {
		t.Errorf("flannel component = %+v", c)
	}
	if !slices.Equal(c.Binaries, []string{"flanneld", "flannel"}) {
		t.Errorf("binaries = %v", c.Binaries)
	}
	if !strings.Contains(strings.Join(c.packages, " "), FlannelCNIVersion) {
		t.Errorf("the plugin's version is not part of the recipe hash: %v", c.packages)
	}
	if !strings.Contains(c.ldflags, "pkg/version.Version="+FlannelVersion) {
		t.Errorf("ldflags %q do not stamp the version", c.ldflags)
	}
}

func TestPatchFlanneldMain(t *testing.T) {
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte(fakeFlannelMain), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := patchFlanneldMain(src); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(src, "main.go")); err == nil {
		t.Error("main.go is still at the module root")
	}
	got, err := os.ReadFile(filepath.Join(src, "cmd", "flanneld", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.NewReplacer(
		"\t_ \"github.com/flannel-io/flannel/pkg/backend/tencentvpc\"\n", "",
		"\t_ \"github.com/flannel-io/flannel/pkg/backend/udp\"\n", "").Replace(fakeFlannelMain)
	if string(got) != want {
		t.Errorf("patched main.go:\n%s\nwant:\n%s", got, want)
	}
}

func TestPatchFlanneldMainRefusesUnknownLayout(t *testing.T) {
	src := t.TempDir()
	noUDP := strings.Replace(fakeFlannelMain, "\t_ \"github.com/flannel-io/flannel/pkg/backend/udp\"\n", "", 1)
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte(noUDP), 0o644); err != nil {
		t.Fatal(err)
	}
	err := patchFlanneldMain(src)
	if err == nil || !strings.Contains(err.Error(), "backend/udp") {
		t.Errorf("patch of a main.go without the udp import: %v", err)
	}
	if _, err := os.Stat(filepath.Join(src, "main.go")); err != nil {
		t.Errorf("a failed patch removed main.go: %v", err)
	}
}

// TestPatchRealFlanneldMain applies the patch to the pinned release's real main.go (a module
// download, no build), so a version bump that moves the imports fails here, in seconds.
func TestPatchRealFlanneldMain(t *testing.T) {
	if _, err := goTool(); err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	scratch := t.TempDir()
	info, err := modDownload(ctx, io.Discard, scratch, flannelModule, FlannelVersion)
	if err != nil {
		t.Skipf("module proxy: %v", err)
	}
	src := filepath.Join(scratch, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(info.Dir, "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "main.go"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := patchFlanneldMain(src); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(src, "cmd", "flanneld", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(got, []byte("tencentvpc")) || !bytes.Contains(got, []byte("backend/vxlan\"")) {
		t.Errorf("patched main.go still imports tencentvpc or lost vxlan")
	}
}

// TestEnsureBuildsFlannel builds the component into a temporary cache: seconds when setup has
// built it before (the Go build cache holds every package), about 3 minutes cold.
func TestEnsureBuildsFlannel(t *testing.T) {
	if testing.Short() {
		t.Skip("builds flanneld")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c, _, _ := ensureInTempCache(ctx, t, Flannel)
	if b, err := exec.CommandContext(ctx, c.Path(FlanneldBinary), "--version").CombinedOutput(); err != nil ||
		strings.TrimSpace(string(b)) != FlannelVersion {
		t.Errorf("flanneld --version: %v: %q", err, b)
	}
	cmd := exec.CommandContext(ctx, c.Path(FlannelCNIBinary))
	cmd.Env = append(os.Environ(), "CNI_COMMAND=VERSION")
	if b, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(b), `"0.4.0"`) {
		t.Errorf("flannel VERSION: %v: %s", err, b)
	}
}
