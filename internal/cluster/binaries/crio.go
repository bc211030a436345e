package binaries

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// CRIOVersion is the CRI-O release built from the Go module proxy.
const CRIOVersion = "v1.34.0"

// CRIO is the component holding the CRI-O daemon and its namespace pinning helper.
const CRIO = "crio"

// Binary names of the CRI-O component. conmon and the OCI runtime (runc) are not part of
// it: they come from the distribution (apt-get install conmon runc).
const (
	CRIOBinary  = "crio"
	PinnsBinary = "pinns"
)

const crioModule = "github.com/cri-o/cri-o"

// crioSeccompHeader is the header the cgo build of crio needs; it comes with the
// libseccomp-dev package (pkg-config finds the library through its .pc file).
const crioSeccompHeader = "/usr/include/seccomp.h"

// crioComponents are the binaries of the CRI-O container runtime.
func crioComponents() []Component {
	return []Component{{
		Name:    CRIO,
		Module:  crioModule,
		Version: CRIOVersion,
		// Measured on the 2-core target: ~6.5 min with empty Go caches (most of it the
		// containers/image and containers/storage trees); pinns takes under a second.
		ColdBuild: 7 * time.Minute,
		recipe:    crioRecipe(),
		// Upstream's Makefile tags, minus the probes of the build host: openpgp instead of
		// gpgme (no libgpgme), no ostree, no btrfs graph driver (overlay only), seccomp on.
		tags: []string{"containers_image_openpgp", "containers_image_ostree_stub",
			"exclude_graphdriver_btrfs", "btrfs_noversion", "seccomp"},
		// The version is a constant in internal/version; upstream's ldflags only add a build
		// date, left out so that the binary is reproducible.
		ldflags: "-s -w",
		// packages feeds the recipe hash: the cgo switch and the make step are part of it.
		packages: []string{"./cmd/crio[CGO_ENABLED=1]", "./pinns[make]"},
		Binaries: []string{CRIOBinary, PinnsBinary},
		verify: verifySpec{
			binary: CRIOBinary,
			args:   []string{"--version"},
			want:   "crio version " + strings.TrimPrefix(CRIOVersion, "v"),
		},
	}}
}

// crioRecipe builds the CRI-O component: crio with cgo (libseccomp) from a
// writable copy of the module, and pinns, a small static C program, with its own Makefile.
// Its name is the one it printed as build kind 103: existing stamps hold it.
func crioRecipe() recipe { return plainRecipe("kind-103", buildCRIO) }

// buildCRIO builds crio with cgo (goEnv disables it; the later CGO_ENABLED=1 wins) and
// pinns with make, both from one writable copy of the module.
func buildCRIO(ctx context.Context, log io.Writer, comp Component, scratch, out string) error {
	if _, err := os.Stat(crioSeccompHeader); err != nil {
		return fmt.Errorf("crio needs libseccomp headers (apt-get install -y libseccomp-dev pkg-config): %w", err)
	}
	src, err := writableModule(ctx, log, comp, scratch)
	if err != nil {
		return err
	}
	args := []string{"build", "-trimpath", "-tags", strings.Join(comp.tags, ","),
		"-ldflags", comp.ldflags, "-o", filepath.Join(out, CRIOBinary), "./cmd/crio"}
	if err := runGo(ctx, log, src, goEnv("CGO_ENABLED=1"), nil, args...); err != nil {
		return fmt.Errorf("build %s: %w", CRIOBinary, err)
	}
	if err := runTool(ctx, log, nil, "make", "-C", filepath.Join(src, "pinns")); err != nil {
		return fmt.Errorf("build %s: %w", PinnsBinary, err)
	}
	// pinns/Makefile writes ../bin/pinns, relative to the pinns directory.
	if err := copyFile(filepath.Join(src, "bin", PinnsBinary), filepath.Join(out, PinnsBinary), 0o755); err != nil {
		return fmt.Errorf("install %s: %w", PinnsBinary, err)
	}
	return nil
}

// runTool runs a build tool other than go (make, cargo) with its output appended to log and
// env added to the environment, in its own process group like runGo, so that cancelling ctx
// also stops the compilers it started.
func runTool(ctx context.Context, log io.Writer, env []string, name string, args ...string) error {
	fmt.Fprintf(log, "\n$ %s %s\n", name, strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = log
	cmd.Stderr = log
	err := runGroup(cmd, log)
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("%s: %w", name, ctx.Err())
	}
	return err
}
