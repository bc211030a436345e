package datapath

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/cluster/binaries"
)

// TestCheckLibraries resolves a real dynamically linked binary's libraries: all present on
// this host, and in a directory holding only libc, every other one named, libc not.
func TestCheckLibraries(t *testing.T) {
	const bin = "/bin/ls"
	if err := checkLibraries("calico-vxlan", bin, libraryDirs()); err != nil {
		t.Fatalf("on this host: %v", err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "libc.so.6"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	err := checkLibraries("calico-vxlan", bin, []string{dir})
	if err == nil {
		t.Fatal("libraries missing from the directory: no error")
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "calico-vxlan needs shared libraries this host lacks for ls: lib") || strings.Contains(msg, "libc.so.6") {
		t.Errorf("error %q: want the datapath, the binary and every library but libc", msg)
	}
	if err := checkLibraries("calico-vxlan", filepath.Join(dir, "libc.so.6"), nil); err == nil || !strings.Contains(err.Error(), "read ") {
		t.Errorf("not an ELF file: %v", err)
	}
}

// TestCalicoNodeLibrariesNamed checks calico-node as setup builds it (with cgo): on a host
// without its libraries each is named with the Debian package that provides it.
func TestCalicoNodeLibrariesNamed(t *testing.T) {
	bin := binaries.Default().Path(binaries.CalicoNodeBinary)
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("calico-node not built (scripts/setup.sh builds it): %v", err)
	}
	err := checkLibraries("calico-vxlan", bin, []string{t.TempDir()})
	for lib, pkg := range libraryPackages {
		if err == nil || !strings.Contains(err.Error(), lib+" (Debian package "+pkg+")") {
			t.Errorf("calico-node without its libraries: %v; want %s named with %s", err, lib, pkg)
		}
	}
}
