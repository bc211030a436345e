package datapath

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
)

// libraryDirs are where the dynamic loader of a Debian host (and most others) finds the
// shared libraries a binary of this architecture names: its multiarch directories, then the
// classic ones.
func libraryDirs() []string {
	triple := map[string]string{"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu"}[runtime.GOARCH]
	return []string{"/lib/" + triple, "/usr/lib/" + triple, "/lib64", "/usr/lib64", "/lib", "/usr/lib", "/usr/local/lib"}
}

// libraryPackages names the Debian package of each shared library a datapath's own binary
// needs (calico-node, built with cgo: libbpf's libelf and zlib, felix's libpcap).
var libraryPackages = map[string]string{
	"libpcap.so.0.8": "libpcap0.8",
	"libelf.so.1":    "libelf1",
	"libz.so.1":      "zlib1g",
}

// checkLibraries fails, naming every missing library and its package, when a shared library
// that the binary at path needs is not on the host: the loader would refuse to start it, and
// a node whose daemon never starts is only found when the wait for it times out.
func checkLibraries(datapath, path string, dirs []string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s: read %s: %w", datapath, path, err)
	}
	defer f.Close()
	needed, err := f.ImportedLibraries()
	if err != nil {
		return fmt.Errorf("%s: shared libraries of %s: %w", datapath, path, err)
	}
	var missing []string
	for _, lib := range needed {
		if !libraryPresent(lib, dirs) {
			if pkg := libraryPackages[lib]; pkg != "" {
				lib += " (Debian package " + pkg + ")"
			}
			missing = append(missing, lib)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	sort.Strings(missing)
	return fmt.Errorf("%s needs shared libraries this host lacks for %s: %s (scripts/setup.sh installs them)",
		datapath, filepath.Base(path), strings.Join(missing, ", "))
}

// libraryPresent reports whether one of dirs holds lib.
func libraryPresent(lib string, dirs []string) bool {
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, lib)); err == nil {
			return true
		}
	}
	return false
}
