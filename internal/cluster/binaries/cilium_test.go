package binaries

import (
	"archive/tar"
	"compress/gzip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestCiliumComponent(t *testing.T) {
	c, err := Lookup(Cilium)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"cilium-agent", "cilium-cni", "cilium-dbg", "cilium-operator-generic", CiliumBPFArchive}
	if !slices.Equal(c.Binaries, want) {
		t.Errorf("binaries = %v, want %v", c.Binaries, want)
	}
	if c.Version != CiliumVersion || c.recipe.name != ciliumRecipe().name {
		t.Errorf("version %s recipe %s", c.Version, c.recipe.name)
	}
	if !slices.Contains(c.Binaries, c.verify.binary) {
		t.Errorf("verifies %s, which it does not build", c.verify.binary)
	}
	// The agent parses its version as "<version> <revision> <date>" plus Go's three fields.
	if !strings.Contains(c.ldflags, "ciliumVersion=1.19.7 "+ciliumRevision+" "+ciliumDate+"'") {
		t.Errorf("ldflags %q do not stamp the version", c.ldflags)
	}
	// Every target is part of the recipe hash, so changing one rebuilds.
	for _, tg := range ciliumTargets() {
		found := false
		for _, p := range c.packages {
			found = found || strings.HasPrefix(p, tg.name+"="+tg.pkg)
		}
		if !found {
			t.Errorf("target %s missing from the recipe: %v", tg.name, c.packages)
		}
	}
}

func TestPackUnpackBPF(t *testing.T) {
	src := t.TempDir()
	files := map[string]string{
		"bpf_lxc.c":          "int x;",
		"include/bpf/api.h":  "#define X",
		"lib/common.h":       "#define Y",
		"tests/skip_me.c":    "no",
		"complexity-tests/a": "no",
	}
	for name, body := range files {
		p := filepath.Join(src, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	archive := filepath.Join(t.TempDir(), CiliumBPFArchive)
	if err := packBPF(src, archive, ciliumBPFSkip()...); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "bpf")
	if err := UnpackBPF(archive, dst); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		got, err := os.ReadFile(filepath.Join(dst, name))
		skipped := strings.HasPrefix(name, "tests/") || strings.HasPrefix(name, "complexity-tests/")
		switch {
		case skipped && err == nil:
			t.Errorf("%s was packed", name)
		case !skipped && (err != nil || string(got) != body):
			t.Errorf("%s: %q, %v", name, got, err)
		}
	}
}

func TestUnpackCiliumBPFRefusesEscapes(t *testing.T) {
	archive := filepath.Join(t.TempDir(), "evil.tar.gz")
	f, err := os.Create(archive)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	body := []byte("x")
	if err := tw.WriteHeader(&tar.Header{Name: "../escape", Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(body); err != nil {
		t.Fatal(err)
	}
	for _, c := range []interface{ Close() error }{tw, zw, f} {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	if err := UnpackBPF(archive, filepath.Join(dir, "bpf")); err == nil {
		t.Fatal("unpacked an entry that leaves the target")
	}
	if _, err := os.Stat(filepath.Join(dir, "escape")); err == nil {
		t.Fatal("file written outside the target")
	}
}
