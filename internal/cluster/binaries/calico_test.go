package binaries

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestCalicoComponent(t *testing.T) {
	c, err := Lookup(Calico)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{CalicoNodeBinary, CalicoCNIBinary, CalicoIPAMBinary, CalicoCRDs}
	if !slices.Equal(c.Binaries, want) || c.recipe.name != calicoRecipe().name {
		t.Errorf("binaries %v recipe %s", c.Binaries, c.recipe.name)
	}
	// The API module the replace points at is part of the recipe: changing it rebuilds.
	if !slices.Contains(c.packages, calicoAPIModule+"@"+calicoAPIVersion) {
		t.Errorf("recipe lacks the API module: %v", c.packages)
	}
	// calico-node and the plugin report the release, as `calico-node -v` shows it.
	for _, v := range []string{"buildinfo.GitVersion=" + CalicoVersion, "startup.VERSION=" + CalicoVersion, "main.VERSION=" + CalicoVersion} {
		if !strings.Contains(c.ldflags, v) {
			t.Errorf("ldflags %q lack %s", c.ldflags, v)
		}
	}
	if c.verify.binary != CalicoNodeBinary || c.verify.want != CalicoVersion {
		t.Errorf("verify %+v", c.verify)
	}
	for _, b := range []string{CalicoNodeBinary, CalicoCRDs} {
		got, err := Providing([]string{b})
		if err != nil || len(got) != 1 || got[0].Name != Calico {
			t.Errorf("%s is built by %v (%v)", b, got, err)
		}
	}
}

// TestCalicoBPFComponent checks the calico-ebpf component: the objects alone, from the calico
// component's sources, with an object filter that is part of the recipe.
func TestCalicoBPFComponent(t *testing.T) {
	c, err := Lookup(CalicoBPF)
	if err != nil {
		t.Fatal(err)
	}
	base, err := Lookup(Calico)
	if err != nil {
		t.Fatal(err)
	}
	if c.Module != base.Module || c.Version != base.Version {
		t.Errorf("calico-ebpf builds %s@%s, calico %s@%s", c.Module, c.Version, base.Module, base.Version)
	}
	if !slices.Equal(c.Binaries, []string{CalicoBPFArchive}) {
		t.Errorf("binaries %v", c.Binaries)
	}
	// calico-node is built with cgo, as upstream's image has it, for every dataplane.
	if !slices.Contains(base.packages, "./node/cmd/calico-node[cgo]") {
		t.Errorf("calico's recipe does not record calico-node's cgo build: %v", base.packages)
	}
	if !slices.Contains(c.packages, "objects:no_log,co-re") {
		t.Errorf("recipe lacks the object filter: %v", c.packages)
	}
	for _, b := range c.Binaries {
		if got, err := Providing([]string{b}); err != nil || len(got) != 1 || got[0].Name != CalicoBPF {
			t.Errorf("%s is built by %v (%v)", b, got, err)
		}
	}
}

// calicoGPLSources is the module cache's felix/bpf-gpl of the pinned Calico, or a skip when
// the module is not downloaded (setup downloads it before any test runs in CI).
func calicoGPLSources(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Skipf("go env: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), calicoModule+"@"+calicoModuleVersion, "felix", "bpf-gpl")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("the calico module is not in the module cache: %v", err)
	}
	return dir
}

// TestPatchCalicoCTLB patches the real source: the sendmsg and recvmsg tail calls go, the
// connect one stays, and sources the patch no longer fits are refused by name.
func TestPatchCalicoCTLB(t *testing.T) {
	src := calicoGPLSources(t)
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join(src, calicoCTLBFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, calicoCTLBFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := patchCalicoCTLB(io.Discard, dir); err != nil {
		t.Fatal(err)
	}
	patched, _ := os.ReadFile(filepath.Join(dir, calicoCTLBFile))
	for _, call := range calicoCTLBTailCalls() {
		if strings.Contains(string(patched), call) {
			t.Errorf("still there: %s", call)
		}
	}
	if !strings.Contains(string(patched), "bpf_tail_call(ctx, &cali_ctlb_progs, PROG_INDEX_V6_CONNECT);") {
		t.Error("the connect program's tail call went too")
	}
	if err := patchCalicoCTLB(io.Discard, dir); err == nil || !strings.Contains(err.Error(), calicoCTLBFile) || !strings.Contains(err.Error(), "0 times, expected once") {
		t.Errorf("patching twice: %v", err)
	}
}

// TestCalicoBPFObjects runs the module's own list of objects through the filter: every tc and
// connect-time object felix loads with its BPF logging off and the kernel's BTF is built, and
// nothing with logging or without CO-RE.
func TestCalicoBPFObjects(t *testing.T) {
	script := filepath.Join(calicoGPLSources(t), "list-objs")
	list, err := exec.Command("bash", script).Output()
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, o := range strings.Fields(string(list)) {
		if containsAll(o, calicoBPFObjectFilter()) {
			kept = append(kept, o)
		}
	}
	for _, want := range []string{"bin/from_wep_no_log_co-re.o", "bin/to_hep_no_log_co-re.o", "bin/from_nat_fib_no_log_co-re.o", "bin/connect_time_no_log_v4_co-re.o", "bin/connect_time_no_log_v46_co-re.o"} {
		if !slices.Contains(kept, want) {
			t.Errorf("filter drops %s", want)
		}
	}
	for _, o := range kept {
		if strings.Contains(o, "debug") || strings.Contains(o, "_info") || !strings.Contains(o, "co-re") {
			t.Errorf("filter keeps %s", o)
		}
	}
	if n := len(strings.Fields(string(list))); len(kept) == 0 || len(kept) > n/4 {
		t.Errorf("filter keeps %d of %d objects", len(kept), n)
	}
}

// TestMissingPrereqs names every missing tool and header with its package, sorted, in one
// error naming the component; a build with everything present is not refused.
func TestMissingPrereqs(t *testing.T) {
	missing := missingPrereqs(map[string]string{"cnb-no-such-tool": "pkg-b", "sh": "dash"},
		map[string]string{"/nonexistent/cnb.h": "pkg-a", "/bin/sh": "dash"})
	want := []string{"/nonexistent/cnb.h (Debian package pkg-a)", "cnb-no-such-tool (Debian package pkg-b)"}
	if !slices.Equal(missing, want) {
		t.Errorf("missing %q, want %q", missing, want)
	}
	err := prereqError(CalicoBPF, missing)
	if err == nil || !strings.Contains(err.Error(), "building calico-ebpf needs /nonexistent/cnb.h (Debian package pkg-a), cnb-no-such-tool") ||
		!strings.Contains(err.Error(), "scripts/setup.sh") {
		t.Errorf("error %v", err)
	}
	if err := prereqError(CalicoBPF, missingPrereqs(map[string]string{"sh": "dash"}, nil)); err != nil {
		t.Errorf("nothing missing: %v", err)
	}
}
