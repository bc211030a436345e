package binaries

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// YoukiVersion is the youki release built from crates.io.
const YoukiVersion = "0.7.0"

// Youki is the component holding the youki OCI runtime (Rust).
const Youki = "youki"

// YoukiBinary is youki's binary name.
const YoukiBinary = "youki"

// youkiFeatures are the crate features built. The crate has no default features: without
// v1 and v2 it would manage no cgroups at all (this kind of host is hybrid). systemd is
// upstream's usual set and needs no library (it speaks D-Bus itself); seccomp links
// libseccomp (Debian's libseccomp-dev).
var youkiFeatures = []string{"v1", "v2", "seccomp", "systemd"}

// youkiComponents are the binaries of the youki runtime handler.
func youkiComponents() []Component {
	return []Component{{
		Name:    Youki,
		Module:  "crates.io/youki",
		Version: YoukiVersion,
		// Measured on the 2-core target: 6.3 min with one job beside another build.
		ColdBuild: 5 * time.Minute,
		recipe:    youkiRecipe(),
		// packages feeds the recipe hash.
		packages: []string{"youki[" + strings.Join(youkiFeatures, ",") + "]", "--locked"},
		Binaries: []string{YoukiBinary},
		verify: verifySpec{
			binary: YoukiBinary,
			args:   []string{"--version"},
			want:   "version: " + YoukiVersion,
		},
	}}
}

// cargoTool locates cargo: in PATH, or where rustup installs it for root.
func cargoTool() (string, error) {
	if p := rustTool("cargo"); p != "" {
		return p, nil
	}
	return "", errors.New("cargo not found in PATH or ~/.cargo/bin: youki and STREAM are built with cargo (rustup, or Debian's cargo)")
}

// youkiRecipe builds the youki component: cargo install from crates.io.
// Its name is the one it printed as build kind 104: existing stamps hold it.
func youkiRecipe() recipe { return recipe{name: "kind-104", build: buildYouki} }

// buildYouki installs the crate at its locked dependency versions and moves the binary to out.
func buildYouki(ctx context.Context, c Cache, log io.Writer, comp Component, scratch, out string) error {
	return cargoInstall(ctx, c, log, "youki", comp.Version, youkiFeatures, YoukiBinary, scratch, out)
}

// cargoInstall installs crate@version from crates.io at its locked dependency versions (with
// features, none for the crate's defaults) into scratch and moves its binary to out. The target
// directory lives in the cache, so that a rebuild (a new recipe) reuses compiled dependencies.
func cargoInstall(ctx context.Context, c Cache, log io.Writer, crate, version string, features []string, binary, scratch, out string) error {
	cargo, err := cargoTool()
	if err != nil {
		return err
	}
	root := filepath.Join(scratch, "cargo-root")
	args := []string{"install", "--locked", "--root", root, "-j", strconv.Itoa(runtime.NumCPU())}
	if len(features) > 0 {
		args = append(args, "--features", strings.Join(features, ","))
	}
	args = append(args, crate+"@"+version)
	if err := runTool(ctx, log, []string{"CARGO_TARGET_DIR=" + filepath.Join(c.Dir, "cargo-target")}, cargo, args...); err != nil {
		return fmt.Errorf("cargo install %s@%s: %w", crate, version, err)
	}
	return os.Rename(filepath.Join(root, "bin", binary), filepath.Join(out, binary))
}
