package binaries

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// GVisorVersion is the gVisor revision built: a pseudo-version of its "go" branch, the
// only form of gVisor a Go build can use (the main branch is Bazel only).
const GVisorVersion = "v0.0.0-20260905035102-160fafc42237"

// GVisor is the component holding runsc and its containerd shim.
const GVisor = "gvisor"

// Binary names of the gVisor component. containerd finds a shim by the name its runtime
// type implies: io.containerd.runsc.v1 is containerd-shim-runsc-v1.
const (
	RunscBinary     = "runsc"
	RunscShimBinary = "containerd-shim-runsc-v1"
)

const gvisorModule = "gvisor.dev/gvisor"

// gvisorShimPatch is the one change gVisor needs here. The shim lowers its own
// oom_score_adj to -999 and fails to start when it cannot; root on this kind of machine
// lacks CAP_SYS_RESOURCE, so the call fails with EPERM. The patched shim goes on without a
// word: containerd reads the whole output of "start" (stdout and stderr) as the bootstrap
// JSON, so even a warning breaks it.
var gvisorShimPatch = struct{ file, old, new string }{
	file: "pkg/shim/v1/manager.go",
	old: `	if err := sys.SetOOMScore(cmd.Process.Pid, oomScoreMax); err != nil {
		return shim.BootstrapParams{}, fmt.Errorf("failed to set OOM Score on shim: %w", err)
	}`,
	new: `	_ = sys.SetOOMScore(cmd.Process.Pid, oomScoreMax) // EPERM without CAP_SYS_RESOURCE`,
}

// gvisorComponents are the binaries of the runsc runtime handler.
func gvisorComponents() []Component {
	return []Component{{
		Name:    GVisor,
		Module:  gvisorModule,
		Version: GVisorVersion,
		// Measured on the 2-core target: 1.5 min with a warm module cache, ~4 min cold.
		ColdBuild: 4 * time.Minute,
		recipe:    gvisorRecipe(),
		// The cgo build fails inside the sandbox (no ld.so in runsc's chroot): goEnv's
		// CGO_ENABLED=0 is required, not just convenient.
		ldflags: "-s -w -X " + gvisorModule + "/runsc/version.version=" + GVisorVersion,
		// packages feeds the recipe hash: the patch is part of it.
		packages: []string{"./runsc", "./shim", gvisorShimPatch.file + "[oom_score_adj failure ignored]"},
		Binaries: []string{RunscBinary, RunscShimBinary},
		verify: verifySpec{
			binary: RunscBinary,
			args:   []string{"--version"},
			want:   GVisorVersion,
		},
	}}
}

// gvisorRecipe builds the gVisor component: both binaries from a patched copy of
// the module.
// Its name is the one it printed as build kind 102: existing stamps hold it.
func gvisorRecipe() recipe { return plainRecipe("kind-102", buildGVisor) }

// buildGVisor builds runsc and the shim from a writable copy of the module with the shim
// patched (see gvisorShimPatch).
func buildGVisor(ctx context.Context, log io.Writer, comp Component, scratch, out string) error {
	src, err := writableModule(ctx, log, comp, scratch)
	if err != nil {
		return err
	}
	if err := patchFile(filepath.Join(src, gvisorShimPatch.file), gvisorShimPatch.old, gvisorShimPatch.new); err != nil {
		return fmt.Errorf("patch %s: %w", comp.Module, err)
	}
	fmt.Fprintf(log, "# patched %s: a failure to lower the shim's oom_score_adj is ignored\n", gvisorShimPatch.file)
	return buildBinaries(ctx, log, comp, src, out,
		goBinary{name: RunscBinary, pkg: "./runsc"}, goBinary{name: RunscShimBinary, pkg: "./shim"})
}

// patchFile replaces the one occurrence of old in path by new. It fails when old is not
// found exactly once, so that a new upstream version whose code moved is noticed instead of
// built unpatched.
func patchFile(path, old, new string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if n := bytes.Count(data, []byte(old)); n != 1 {
		return fmt.Errorf("%s: expected the patched code once, found it %d times", path, n)
	}
	return os.WriteFile(path, bytes.Replace(data, []byte(old), []byte(new), 1), 0o644)
}
