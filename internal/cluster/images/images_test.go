package images

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// buildStatic compiles a tiny static program that prints msg.
func buildStatic(t *testing.T, dir, msg string) string {
	t.Helper()
	src := filepath.Join(dir, "src-"+msg)
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	prog := "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"" + msg + "\") }\n"
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module tiny\n\ngo 1.21\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, msg, "tiny")
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return out
}

// readImage loads img's archive and checks that it is tagged with img.Ref.
func readImage(t *testing.T, img Image) v1.Image {
	t.Helper()
	tag, err := name.NewTag(img.Ref)
	if err != nil {
		t.Fatal(err)
	}
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(img.Archive) })
	if err != nil {
		t.Fatalf("load manifest: %v", err)
	}
	if len(m) != 1 || !reflect.DeepEqual(m[0].RepoTags, []string{img.Ref}) {
		t.Fatalf("archive manifest %+v, want one image tagged %s", m, img.Ref)
	}
	v, err := tarball.ImageFromPath(img.Archive, &tag)
	if err != nil {
		t.Fatalf("read archive: %v", err)
	}
	return v
}

// layerFiles returns the tar headers of a layer, keyed by clean path.
func layerFiles(t *testing.T, l v1.Layer) map[string]*tar.Header {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	files := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("read layer: %v", err)
		}
		files[strings.TrimPrefix(filepath.Clean("/"+h.Name), "/")] = h
	}
	return files
}

func TestFromBinary(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	binA := buildStatic(t, dir, "a")
	binB := buildStatic(t, dir, "b")
	var progress bytes.Buffer
	b := Builder{CacheDir: filepath.Join(dir, "cache"), Progress: &progress}

	img, err := b.FromBinary(ctx, "cnb-pause", binA, []string{"-v", "x"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(img.Ref, "cnibench.local/cnb-pause:") {
		t.Errorf("ref %s", img.Ref)
	}
	v := readImage(t, img)
	cf, err := v.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := cf.Config.Entrypoint; !reflect.DeepEqual(got, []string{"/tiny"}) {
		t.Errorf("entrypoint %q", got)
	}
	if got := cf.Config.Cmd; !reflect.DeepEqual(got, []string{"-v", "x"}) {
		t.Errorf("cmd %q", got)
	}
	if cf.OS != "linux" || cf.Architecture == "" || cf.RootFS.Type != "layers" {
		t.Errorf("config os=%q arch=%q rootfs=%q", cf.OS, cf.Architecture, cf.RootFS.Type)
	}
	layers, err := v.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %d, %v", len(layers), err)
	}
	files := layerFiles(t, layers[0])
	h := files["tiny"]
	if h == nil {
		t.Fatalf("no /tiny in layer; files: %v", files)
	}
	if h.Mode != 0o755 || h.Uid != 0 || h.Gid != 0 || h.Uname != "root" || h.Typeflag != tar.TypeReg {
		t.Errorf("/tiny: mode %o uid %d gid %d uname %q type %c", h.Mode, h.Uid, h.Gid, h.Uname, h.Typeflag)
	}
	want, _ := os.Stat(binA)
	if h.Size != want.Size() {
		t.Errorf("/tiny has %d bytes, binary %d", h.Size, want.Size())
	}
	if len(files) != 1 {
		t.Errorf("layer holds %d entries, want 1", len(files))
	}
	t.Logf("progress: %s", strings.TrimSpace(progress.String()))

	// Same inputs: same tag, and the archive is reused, not rewritten.
	before, _ := os.Stat(img.Archive)
	again, err := b.FromBinary(ctx, "cnb-pause", binA, []string{"-v", "x"})
	if err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(again.Archive)
	if again != img || !os.SameFile(before, after) {
		t.Errorf("rebuild gave %+v (same file %v), want %+v reused", again, os.SameFile(before, after), img)
	}

	// Any changed input changes the tag.
	for _, c := range []struct {
		what string
		name string
		bin  string
		args []string
	}{
		{"binary", "cnb-pause", binB, []string{"-v", "x"}},
		{"args", "cnb-pause", binA, []string{"-v", "y"}},
		{"name", "other", binA, []string{"-v", "x"}},
	} {
		other, err := b.FromBinary(ctx, c.name, c.bin, c.args)
		if err != nil {
			t.Fatal(err)
		}
		if other.Ref == img.Ref || other.Archive == img.Archive {
			t.Errorf("changing the %s kept ref %s", c.what, other.Ref)
		}
	}

	// Nothing temporary is left behind.
	entries, _ := os.ReadDir(filepath.Join(b.CacheDir, "images"))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tmpPrefix) {
			t.Errorf("left %s behind", e.Name())
		}
	}
}

func TestFromBinaryRejects(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b := Builder{CacheDir: dir}
	dynamic, err := exec.LookPath("ls")
	if err != nil {
		t.Skip("no ls to use as a dynamically linked binary")
	}
	if _, err := b.FromBinary(ctx, "x", dynamic, nil); err == nil || !strings.Contains(err.Error(), "dynamically linked") {
		t.Errorf("dynamic binary: err %v", err)
	}
	script := filepath.Join(dir, "script")
	os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755)
	if _, err := b.FromBinary(ctx, "x", script, nil); err == nil || !strings.Contains(err.Error(), "not an ELF") {
		t.Errorf("script: err %v", err)
	}
	for _, n := range []string{"", "Upper", "a/b", "-a", "a-", "rootfs", "a.b"} {
		if _, err := b.FromBinary(ctx, n, dynamic, nil); err == nil || !strings.Contains(err.Error(), "image name") {
			t.Errorf("name %q: err %v", n, err)
		}
	}
}

func TestPruneArchives(t *testing.T) {
	dir := t.TempDir()
	old := []string{"tools-000000000001.tar", "tools-000000000002.tar", "tools-000000000003.tar", "tools-000000000004.tar"}
	keep := []string{"tools-x-000000000001.tar", "toolsy-000000000001.tar", "tools-nothex.tar", "rootfs-abc.tar.gz"}
	for i, n := range append(append([]string{}, old...), keep...) {
		p := filepath.Join(dir, n)
		os.WriteFile(p, nil, 0o644)
		mt := layerTime().Add(time.Duration(i) * time.Hour)
		os.Chtimes(p, mt, mt)
	}
	pruneArchives(dir, "tools")
	if _, err := os.Stat(filepath.Join(dir, old[0])); err == nil {
		t.Errorf("oldest archive kept")
	}
	for _, n := range append(old[1:], keep...) {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Errorf("%s removed", n)
		}
	}
}

func TestMmdebstrapErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	bin := filepath.Join(dir, "cnibench")
	os.WriteFile(bin, []byte("not really"), 0o755)

	missing := Builder{CacheDir: dir, mmdebstrap: filepath.Join(dir, "no-mmdebstrap")}
	if _, err := missing.Tools(ctx, bin); err == nil || !strings.Contains(err.Error(), "install mmdebstrap (scripts/setup.sh)") {
		t.Errorf("missing mmdebstrap: err %v", err)
	}

	fake := filepath.Join(dir, "mmdebstrap")
	script := "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'mmdebstrap 0.0-fake'; exit 0; fi\n" +
		"echo 'I: downloading packages with apt...' >&2\necho 'E: mirror unreachable' >&2\nprintf 'partial' \nexit 3\n"
	os.WriteFile(fake, []byte(script), 0o755)
	failing := Builder{CacheDir: dir, mmdebstrap: fake}
	_, err := failing.Tools(ctx, bin)
	if err == nil || !strings.Contains(err.Error(), "E: mirror unreachable") || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("failing mmdebstrap: err %v", err)
	}
	t.Logf("error: %v", err)
	entries, _ := os.ReadDir(filepath.Join(dir, "images"))
	for _, e := range entries {
		if e.Name() != ".lock" {
			t.Errorf("failed build left %s", e.Name())
		}
	}
}

// TestMmdebstrapCancel stops a build while mmdebstrap streams its tarball:
// the build must end promptly and leave nothing but the lock file.
func TestMmdebstrapCancel(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "cnibench")
	os.WriteFile(bin, []byte("not really"), 0o755)
	fake := filepath.Join(dir, "mmdebstrap")
	script := "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'mmdebstrap 0.0-fake'; exit 0; fi\n" +
		"trap 'echo cleaning up >&2; exit 143' TERM\nwhile :; do head -c 1048576 /dev/zero; done\n"
	os.WriteFile(fake, []byte(script), 0o755)
	b := Builder{CacheDir: dir, mmdebstrap: fake}

	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := b.Tools(ctx, bin)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want deadline exceeded", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("cancelled build took %s", d)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "images"))
	for _, e := range entries {
		if e.Name() != ".lock" {
			t.Errorf("cancelled build left %s", e.Name())
		}
	}
}

func TestTailBuffer(t *testing.T) {
	tb := &tailBuffer{max: 10}
	io.WriteString(tb, "line one\nline two\nend\n")
	if got := tb.String(); got != "end\n" {
		t.Errorf("tail %q", got)
	}
	short := &tailBuffer{max: 100}
	io.WriteString(short, "a\nb\n")
	if got := short.String(); got != "a\nb\n" {
		t.Errorf("tail %q", got)
	}
}
