package binaries

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// rustTarget is how a crate is built for a Go architecture: Rust's target triple, the C cross
// linker Debian ships for it, and a start file of the C library it links against.
type rustTarget struct{ triple, linker, crt string }

// rustTargets are the architectures crates are cross-built for (the tools image's arm64 from
// amd64).
var rustTargets = map[string]rustTarget{"arm64": {triple: "aarch64-unknown-linux-gnu", linker: "aarch64-linux-gnu-gcc", crt: "/usr/aarch64-linux-gnu/lib/crti.o"}}

// cargoInstallRecipe names the recipe of components installed from crates.io (STREAM).
const cargoInstallRecipe = "cargo-install"

// CrossReady says why comp's binaries cannot be built for linux/goarch on this machine, or
// nil when they can: a Go program always can; a crate needs rustup (which adds Rust's
// standard library for the target; Debian's cargo has none for another architecture) and
// Debian's C cross linker.
func CrossReady(comp Component, goarch string) error {
	switch comp.recipe.name {
	case goInstallRecipe().name:
		return nil
	case cargoInstallRecipe:
	default:
		return fmt.Errorf("%s is neither a Go program nor a crate, and its toolchain has no %s target here", comp.Name, goarch)
	}
	t, ok := rustTargets[goarch]
	if !ok {
		return fmt.Errorf("%s: no Rust target for %s is known here (only %s)", comp.Name, goarch, strings.Join(knownRustArchs(), ", "))
	}
	if _, err := exec.LookPath(t.linker); err != nil {
		return fmt.Errorf("%s for %s needs the C cross linker %s (Debian's gcc-aarch64-linux-gnu, which scripts/setup.sh installs)", comp.Name, goarch, t.linker)
	}
	if _, err := os.Stat(t.crt); err != nil {
		return fmt.Errorf("%s for %s needs the C library to link against, %s (Debian's libc6-dev-arm64-cross, which scripts/setup.sh installs)", comp.Name, goarch, t.crt)
	}
	if _, err := rustupTool(); err != nil {
		return fmt.Errorf("%s for %s: %w", comp.Name, goarch, err)
	}
	return nil
}

// knownRustArchs are rustTargets' architectures, sorted.
func knownRustArchs() []string { return slices.Sorted(maps.Keys(rustTargets)) }

// rustTool finds one of Rust's tools in PATH or where rustup installs them, ~/.cargo/bin; ""
// when it is in neither.
func rustTool(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if home, err := os.UserHomeDir(); err == nil {
		p := filepath.Join(home, ".cargo", "bin", name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// rustupTool finds rustup beside cargo.
func rustupTool() (string, error) {
	if p := rustTool("rustup"); p != "" {
		return p, nil
	}
	return "", errors.New("rustup not found in PATH or ~/.cargo/bin: a crate is built for another architecture with the Rust standard library rustup adds for it")
}

// crossCrate builds comp's crate for linux/goarch into the cache (CrossPath): rustup
// adds the target's standard library (once; it is kept), and cargo links with Debian's cross
// linker, in the cache's shared cargo target directory, where each target has its own tree.
func (c Cache) crossCrate(ctx context.Context, log io.Writer, comp Component, goarch string) error {
	t := rustTargets[goarch]
	rustup, err := rustupTool()
	if err != nil {
		return err
	}
	cargo, err := cargoTool()
	if err != nil {
		return err
	}
	if err := runTool(ctx, log, nil, rustup, "target", "add", t.triple); err != nil {
		return fmt.Errorf("rustup target add %s: %w", t.triple, err)
	}
	scratch, err := os.MkdirTemp(filepath.Join(c.Dir, "tmp"), "cross-"+comp.Name+"-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	crate := comp.packages[0]
	linkerVar := "CARGO_TARGET_" + strings.ToUpper(strings.ReplaceAll(t.triple, "-", "_")) + "_LINKER"
	env := []string{"CARGO_TARGET_DIR=" + filepath.Join(c.Dir, "cargo-target"), linkerVar + "=" + t.linker}
	args := []string{"install", "--locked", "--root", scratch, "--target", t.triple, "-j", strconv.Itoa(runtime.NumCPU()), crate + "@" + comp.Version}
	if err := runTool(ctx, log, env, cargo, args...); err != nil {
		return fmt.Errorf("cargo install %s@%s --target %s: %w", crate, comp.Version, t.triple, err)
	}
	for _, b := range comp.Binaries {
		if err := os.Rename(filepath.Join(scratch, "bin", b), c.CrossPath(comp, goarch, b)); err != nil {
			return fmt.Errorf("%s for %s: %w", comp.Name, goarch, err)
		}
	}
	return nil
}
