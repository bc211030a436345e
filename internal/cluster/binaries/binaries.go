// Package binaries builds and caches the third-party binaries the embedded
// local cluster runs (Kubernetes components, containerd, CoreDNS, CNI
// plugins).
//
// The target machine reaches no release download sites, only the Go module
// proxy, so every binary is compiled from its module at a pinned version.
// Builds are slow (Kubernetes takes minutes on two cores), so results are
// cached under one directory and guarded by per-component stamps: a stamp
// records the version and a hash of the build recipe, and a component whose
// stamp matches and whose binaries are all present is never rebuilt.
//
// Cache layout (Dir defaults to /var/cache/cnibench, see DefaultDir):
//
//	<Dir>/bin/<binary>                installed binaries (also cnb-pause, see PauseBinary)
//	<Dir>/bin/kubernetes-<v>/<binary> one Kubernetes release's binaries (see Component.Subdir)
//	<Dir>/bin/.stamps/<component>     "<version> <recipe hash>" (<component> is the Subdir if set)
//	<Dir>/logs/build-<component>.log  output of the last build's go commands
//	<Dir>/tmp/                        scratch build dirs, emptied by every Ensure
//	<Dir>/.lock                       serialises concurrent Ensure calls
package binaries

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// EnvCacheDir names the environment variable that overrides the cache root.
const EnvCacheDir = "CNIBENCH_CACHE"

// DefaultCacheDir is the cache root used when EnvCacheDir is unset.
const DefaultCacheDir = "/var/cache/cnibench"

// Cache is a directory of built binaries. The zero value is not usable; set
// Dir (see DefaultDir).
type Cache struct {
	// Dir is the cache root.
	Dir string
}

// DefaultDir returns $CNIBENCH_CACHE if set, otherwise /var/cache/cnibench.
func DefaultDir() string {
	if d := os.Getenv(EnvCacheDir); d != "" {
		return d
	}
	return DefaultCacheDir
}

// Default returns the cache at DefaultDir.
func Default() Cache {
	return Cache{Dir: DefaultDir()}
}

// BinDir is the directory holding the installed binaries.
func (c Cache) BinDir() string {
	return filepath.Join(c.Dir, "bin")
}

// Path returns where the binary with the given name lives in the cache. It
// does not check that the binary exists.
func (c Cache) Path(name string) string {
	return filepath.Join(c.BinDir(), name)
}

// BinaryPath returns where one binary of comp lives in the cache: in the bin dir, or in the
// component's own directory below it (see Component.Subdir).
func (c Cache) BinaryPath(comp Component, name string) string {
	return filepath.Join(c.BinDir(), comp.Subdir, name)
}

// key names the component's stamp and build log: its Subdir when it has one, so that each
// cached version has its own.
func (comp Component) key() string {
	if comp.Subdir != "" {
		return comp.Subdir
	}
	return comp.Name
}

// LogPath returns the build log of the named component.
func (c Cache) LogPath(component string) string {
	return filepath.Join(c.Dir, "logs", "build-"+component+".log")
}

func (c Cache) stampPath(component string) string {
	return filepath.Join(c.BinDir(), ".stamps", component)
}

// upToDate reports whether the component's stamp matches its current recipe
// and every one of its binaries is present.
func (c Cache) upToDate(comp Component) bool {
	if !c.stampMatches(comp) {
		return false
	}
	return len(c.absent(comp)) == 0
}

func (c Cache) stampMatches(comp Component) bool {
	b, err := os.ReadFile(c.stampPath(comp.key()))
	return err == nil && string(b) == comp.stampContent()
}

// absent lists the component's binaries that are not regular executable
// files in the bin dir.
func (c Cache) absent(comp Component) []string {
	var out []string
	for _, name := range comp.Binaries {
		fi, err := os.Stat(c.BinaryPath(comp, name))
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			out = append(out, name)
		}
	}
	return out
}

// Missing returns the binaries of comps (all components when none are given)
// that have to be built: those absent from the cache, plus every binary of a
// component whose stamp is missing or records another version or recipe.
func (c Cache) Missing(comps ...Component) []string {
	var out []string
	for _, comp := range defaultComponents(comps) {
		if c.stampMatches(comp) {
			out = append(out, c.absent(comp)...)
			continue
		}
		out = append(out, comp.Binaries...)
	}
	return out
}

// Check returns nil when every binary of comps (all components when none are
// given) is built and current, and otherwise one error naming what is missing
// and how to build it.
func (c Cache) Check(comps ...Component) error {
	var parts []string
	for _, comp := range defaultComponents(comps) {
		var miss []string
		if c.stampMatches(comp) {
			miss = c.absent(comp)
		} else {
			miss = comp.Binaries
		}
		if len(miss) > 0 {
			parts = append(parts, fmt.Sprintf("%s %s: %s", comp.Name, comp.Version, strings.Join(miss, ", ")))
		}
	}
	if len(parts) == 0 {
		return nil
	}
	return fmt.Errorf("binaries missing or out of date in %s (%s); run scripts/setup.sh (or `cnibench setup`) to build them",
		c.BinDir(), strings.Join(parts, "; "))
}

// defaultComponents treats "no components" as "all components", which is
// what callers checking the whole cluster want.
func defaultComponents(comps []Component) []Component {
	if len(comps) == 0 {
		return Components()
	}
	return comps
}

// writeStamp records a successful build. It writes a temp file and renames
// it so a crash never leaves a truncated stamp that might parse as valid.
func (c Cache) writeStamp(comp Component) error {
	p := c.stampPath(comp.key())
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("create stamp dir: %w", err)
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, []byte(comp.stampContent()), 0o644); err != nil {
		return fmt.Errorf("write stamp %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return fmt.Errorf("install stamp %s: %w", p, err)
	}
	return nil
}

// removeStamp invalidates the component before its binaries are replaced, so
// an interruption between the renames of several binaries is detected as an
// incomplete build rather than a mix of old and new binaries.
func (c Cache) removeStamp(comp Component) error {
	err := os.Remove(c.stampPath(comp.key()))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove stamp of %s: %w", comp.Name, err)
	}
	return nil
}
