package binaries

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// CrossPath returns where EnsureCross puts binary name of comp built for goarch: beside the
// host's binaries, under a directory per architecture and version, so that neither replaces
// the host's and a new version is a new file.
func (c Cache) CrossPath(comp Component, goarch, name string) string {
	return filepath.Join(c.BinDir(), "linux-"+goarch, comp.Name+"-"+comp.Version, name)
}

// EnsureCross builds comp's binaries for linux/goarch unless they are cached, for the tools
// image of nodes of another architecture: a Go program (k6) with cgo off, a crate (STREAM) with
// rustup's standard library for the target and Debian's cross linker (CrossReady says what is
// missing). The binaries cannot run here, so the smoke test of Ensure is not run; the caller
// checks their ELF machine instead.
func (c Cache) EnsureCross(ctx context.Context, w io.Writer, comp Component, goarch string) error {
	if err := CrossReady(comp, goarch); err != nil {
		return err
	}
	dir := filepath.Dir(c.CrossPath(comp, goarch, "x"))
	if c.crossDone(comp, goarch) {
		return nil
	}
	if w == nil {
		w = io.Discard
	}
	for _, d := range []string{dir, filepath.Join(c.Dir, "logs"), filepath.Join(c.Dir, "tmp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create cache dir: %w", err)
		}
	}
	unlock, err := c.lock(ctx, w)
	if err != nil {
		return err
	}
	defer unlock()
	if c.crossDone(comp, goarch) {
		return nil
	}
	log, err := os.OpenFile(c.LogPath(comp.key()+"-"+goarch), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open build log: %w", err)
	}
	defer log.Close()
	fmt.Fprintf(w, "cross-compiling %s %s for linux/%s (cold ~%s)...\n", comp.Name, comp.Version, goarch, comp.ColdBuild)
	start := time.Now()
	if comp.recipe.name == cargoInstallRecipe {
		err = c.crossCrate(ctx, log, comp, goarch)
	} else {
		err = c.crossGo(ctx, log, comp, goarch)
	}
	if err != nil {
		return fmt.Errorf("%s for %s (log %s): %w", comp.Name, goarch, log.Name(), err)
	}
	fmt.Fprintf(w, "%s for linux/%s built in %s\n", comp.Name, goarch, time.Since(start).Round(time.Second))
	return nil
}

// crossGo builds a Go component's packages for linux/goarch with cgo off.
func (c Cache) crossGo(ctx context.Context, log io.Writer, comp Component, goarch string) error {
	info, err := modDownload(ctx, log, filepath.Join(c.Dir, "tmp"), comp.Module, comp.Version)
	if err != nil {
		return err
	}
	for i, pkg := range comp.packages {
		if err := CrossBuild(ctx, log, info.Dir, pkg, comp.ldflags, goarch, c.CrossPath(comp, goarch, comp.Binaries[i])); err != nil {
			return err
		}
	}
	return nil
}

// crossDone reports whether every binary of comp for goarch is in the cache. CrossBuild
// renames each into place only once it is complete.
func (c Cache) crossDone(comp Component, goarch string) bool {
	for _, b := range comp.Binaries {
		if _, err := os.Stat(c.CrossPath(comp, goarch, b)); err != nil {
			return false
		}
	}
	return len(comp.Binaries) > 0
}

// CrossBuild builds the Go package pkg of the module in moduleDir for linux/goarch with cgo
// off into out, through a temporary file so that out only ever holds a complete binary. The
// module directory may be read-only (the module cache): nothing is written there.
func CrossBuild(ctx context.Context, log io.Writer, moduleDir, pkg, ldflags, goarch, out string) error {
	if goarch == "" {
		return errors.New("cross build: no target architecture")
	}
	tmp := filepath.Join(filepath.Dir(out), ".tmp-"+filepath.Base(out))
	defer os.Remove(tmp)
	args := []string{"build", "-o", tmp}
	if ldflags != "" {
		args = append(args, "-ldflags="+ldflags)
	}
	// -mod=readonly (the last GOFLAGS wins): a source tree's go.mod is never rewritten.
	env := goEnv("GOOS=linux", "GOARCH="+goarch, "GOFLAGS=-mod=readonly -buildvcs=false")
	if err := runGo(ctx, log, moduleDir, env, nil, append(args, pkg)...); err != nil {
		return err
	}
	if err := os.Rename(tmp, out); err != nil {
		return fmt.Errorf("cross build: %w", err)
	}
	return nil
}
