package toolsimage

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/cluster/binaries"
	"github.com/cnibench/cnibench/internal/cluster/images"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

func TestParsePlatforms(t *testing.T) {
	archs, err := ParsePlatforms(Platform())
	if err != nil || !slices.Equal(archs, []string{runtime.GOARCH}) {
		t.Errorf("%s: %v, %v", Platform(), archs, err)
	}
	for _, bad := range []string{"linux/s390x", "amd64", "", "linux/amd64,,"} {
		if _, err := ParsePlatforms(bad); err == nil || !strings.Contains(err.Error(), "--platforms: unknown platform") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if runtime.GOARCH != "amd64" {
		return
	}
	archs, err = ParsePlatforms("linux/amd64, linux/arm64,linux/amd64")
	if err != nil || !slices.Equal(archs, []string{"amd64", "arm64"}) {
		t.Errorf("both: %v, %v", archs, err)
	}
}

// elfMachines are the machines of the image's binaries, by architecture.
var elfMachines = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// TestIndexForArm64Nodes builds the index of the tools image for amd64 and arm64 with the
// machine's cache (/var/cache/cnibench, or $CNIBENCH_CACHE) and proves what an arm64 node
// cannot be run here to prove: each manifest's platform, each binary's ELF machine, and every
// shared library each dynamically linked binary needs (its interpreter and DT_NEEDED, through
// the libraries' own needs) present in its own image. Warm: ~30 s; cold it cross-compiles k6
// (~5 min on 2 cores), STREAM's crate (~4 min) and cnibench, and fetches Debian's arm64
// packages.
func TestIndexForArm64Nodes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the tools image for two architectures; skipped with -short")
	}
	if runtime.GOARCH != "amd64" {
		t.Skip("arm64 images are built from amd64 machines")
	}
	if os.Geteuid() != 0 {
		t.Skip("mmdebstrap needs root")
	}
	if _, err := exec.LookPath("mmdebstrap"); err != nil {
		t.Fatalf("running as root but mmdebstrap is missing (scripts/setup.sh installs it): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	source, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	cache := binaries.Cache{Dir: binaries.DefaultDir()}
	self := filepath.Join(t.TempDir(), "cnibench")
	if err := binaries.CrossBuild(ctx, io.Discard, source, "./cmd/cnibench", "-s -w", "amd64", self); err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	start := time.Now()
	idx, built, err := BuildIndex(ctx, Options{Cache: cache, Self: self, Source: source, Progress: &progress}, []string{"amd64", "arm64"})
	t.Logf("built in %s:\n%s", time.Since(start).Round(time.Second), progress.String())
	if err != nil {
		t.Fatal(err)
	}
	checkIndex(t, idx)
	// Nothing is left out: STREAM is built for arm64 with rustup's target and Debian's cross
	// linker, which scripts/setup.sh installs.
	for _, b := range built {
		if len(b.Left) > 0 {
			t.Errorf("%s leaves out %v, want every tool", b.Arch, b.Left)
		}
		checkBinaries(t, b, b.Left)
	}
}

func checkIndex(t *testing.T, idx v1.ImageIndex) {
	t.Helper()
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range m.Manifests {
		got = append(got, d.Platform.OS+"/"+d.Platform.Architecture)
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.OS+"/"+cf.Architecture != got[len(got)-1] {
			t.Errorf("manifest %s of %s has the config of %s/%s", d.Digest, got[len(got)-1], cf.OS, cf.Architecture)
		}
		t.Logf("manifest %s %s (%d bytes)", d.Digest, got[len(got)-1], d.Size)
	}
	if !slices.Equal(got, []string{"linux/amd64", "linux/arm64"}) {
		t.Errorf("index of %v, want linux/amd64 and linux/arm64", got)
	}
}

// checkBinaries checks every tool of b's image: its ELF machine, and its interpreter and
// libraries found in the image itself.
func checkBinaries(t *testing.T, b Built, left []string) {
	t.Helper()
	fs := readFS(t, b.Image)
	tools := []string{"usr/local/bin/cnibench", "usr/local/bin/k6", "usr/local/bin/stream",
		"bin/iperf3", "bin/sockperf", "bin/netperf", "bin/netserver", "bin/stress-ng", "bin/sysbench",
		"bin/ip", "bin/ping", "sbin/ethtool", "bin/sh", "bin/sleep"}
	want := elfMachines[b.Arch]
	for _, tool := range tools {
		if slices.Contains(left, path.Base(tool)) {
			if _, ok := fs.resolve(tool); ok {
				t.Errorf("%s: %s is in the image but said to be left out", b.Arch, tool)
			}
			continue
		}
		line, err := fs.check(tool, want, images.MultiarchTriplet(b.Arch))
		if err != nil {
			t.Errorf("%s: %v", b.Arch, err)
			continue
		}
		t.Logf("%s %s", b.Arch, line)
	}
}

// imageFS is an image's flattened file system: its ELF files' contents and its symlinks.
type imageFS struct {
	elves map[string][]byte
	other map[string]bool
	links map[string]string
}

func readFS(t *testing.T, img v1.Image) imageFS {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	fs := imageFS{elves: map[string][]byte{}, other: map[string]bool{}, links: map[string]string{}}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return fs
		}
		if err != nil {
			t.Fatal(err)
		}
		name := strings.Trim(path.Clean("/"+h.Name), "/")
		switch h.Typeflag {
		case tar.TypeSymlink:
			fs.links[name] = h.Linkname
		case tar.TypeReg:
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.HasPrefix(data, []byte(elf.ELFMAG)) {
				fs.elves[name] = data
			} else {
				fs.other[name] = true
			}
		default:
			fs.other[name] = true
		}
	}
}

// resolve follows p's symlinks inside the image, as the kernel and the dynamic linker would,
// and reports whether it ends at a file.
func (fs imageFS) resolve(p string) (string, bool) {
	for hops := 0; hops < 40; hops++ {
		parts := strings.Split(strings.Trim(path.Clean("/"+p), "/"), "/")
		moved := false
		for i := range parts {
			target, ok := fs.links[strings.Join(parts[:i+1], "/")]
			if !ok {
				continue
			}
			if !strings.HasPrefix(target, "/") {
				target = path.Join("/"+strings.Join(parts[:i], "/"), target)
			}
			p, moved = path.Join(target, strings.Join(parts[i+1:], "/")), true
			break
		}
		if !moved {
			p = strings.Trim(path.Clean("/"+p), "/")
			_, isELF := fs.elves[p]
			return p, isELF || fs.other[p]
		}
	}
	return "", false
}

// check checks the ELF file tool and returns a line about it: its machine, and how many
// libraries it needs in all.
func (fs imageFS) check(tool string, want elf.Machine, triplet string) (string, error) {
	file, ok := fs.resolve(tool)
	if !ok {
		return "", fmt.Errorf("%s is not in the image", tool)
	}
	f, err := fs.open(file, want)
	if err != nil {
		return "", fmt.Errorf("%s: %w", tool, err)
	}
	interp := ""
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			raw, _ := io.ReadAll(p.Open())
			interp = strings.TrimRight(string(raw), "\x00")
		}
	}
	if interp == "" {
		return fmt.Sprintf("%-24s %s static", tool, f.Machine), nil
	}
	if _, ok := fs.resolve(interp); !ok {
		return "", fmt.Errorf("%s: its interpreter %s is not in the image", tool, interp)
	}
	libs := map[string]string{}
	if err := fs.needs(f, triplet, want, libs); err != nil {
		return "", fmt.Errorf("%s: %w", tool, err)
	}
	names := make([]string, 0, len(libs))
	for n := range libs {
		names = append(names, n)
	}
	sort.Strings(names)
	return fmt.Sprintf("%-24s %s interp %s, needs %s", tool, f.Machine, interp, strings.Join(names, " ")), nil
}

func (fs imageFS) open(file string, want elf.Machine) (*elf.File, error) {
	data, ok := fs.elves[file]
	if !ok {
		return nil, fmt.Errorf("%s is not an ELF file", file)
	}
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	if f.Machine != want {
		return nil, fmt.Errorf("%s is for %s, want %s", file, f.Machine, want)
	}
	return f, nil
}

// needs adds f's DT_NEEDED libraries to found, each looked up in the dynamic linker's default
// directories of the image, and theirs in turn.
func (fs imageFS) needs(f *elf.File, triplet string, want elf.Machine, found map[string]string) error {
	needed, err := f.ImportedLibraries()
	if err != nil {
		return err
	}
	for _, lib := range needed {
		if _, ok := found[lib]; ok {
			continue
		}
		file := ""
		for _, dir := range []string{"lib/" + triplet, "usr/lib/" + triplet, "lib", "usr/lib"} {
			if p, ok := fs.resolve(dir + "/" + lib); ok {
				file = p
				break
			}
		}
		if file == "" {
			return fmt.Errorf("needs %s, which is not in the image's /lib/%s, /usr/lib/%s, /lib or /usr/lib", lib, triplet, triplet)
		}
		found[lib] = file
		lf, err := fs.open(file, want)
		if err != nil {
			return fmt.Errorf("needs %s: %w", lib, err)
		}
		if err := fs.needs(lf, triplet, want, found); err != nil {
			return fmt.Errorf("%s %w", lib, err)
		}
	}
	return nil
}
