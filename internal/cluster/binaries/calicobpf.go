package binaries

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// CalicoBPF is the component of the calico-ebpf datapath: the BPF objects felix's eBPF
// dataplane loads, compiled from the calico component's sources. calico-node itself, the CNI
// plugin and the CRDs are the calico component's: the same for every dataplane.
const CalicoBPF = "calico-ebpf"

// CalicoBPFArchive holds the compiled BPF objects as a gzipped tar of flat file names, which
// felix reads from the fixed /usr/lib/calico/bpf.
const CalicoBPFArchive = "calico-bpf.tar.gz"

// calicoBPFComponents is the component of the calico-ebpf datapath.
func calicoBPFComponents() []Component {
	return []Component{{
		Name:    CalicoBPF,
		Module:  calicoModule,
		Version: calicoModuleVersion,
		// Measured on the 2-core target: 67 objects in 67 s with clang 14.
		ColdBuild: 2 * time.Minute,
		recipe:    calicoBPFRecipe(),
		// Recorded for the recipe hash: which objects are built, and the patch.
		packages: []string{"objects:" + strings.Join(calicoBPFObjectFilter(), ","),
			"patch:" + calicoCTLBFile + ":" + strings.Join(calicoCTLBTailCalls(), "")},
		Binaries: []string{CalicoBPFArchive},
	}}
}

// calicoBPFObjectFilter are what every object felix loads here has in its name: no BPF
// logging (felix's bpfLogLevel off, its default and the only fair one to measure), and CO-RE
// (felix picks the CO-RE objects when the kernel has BTF, which the datapath requires). The
// module's full set is 387 objects, six times the build.
func calicoBPFObjectFilter() []string { return []string{"no_log", "co-re"} }

// calicoBPFAlways are objects felix loads whatever its settings: the tc and XDP preambles and
// the default policy program.
func calicoBPFAlways() []string {
	return []string{"bin/tc_preamble.o", "bin/xdp_preamble.o", "bin/policy_default.o"}
}

// missingPrereqs names every tool not on PATH and header not installed, with its Debian
// package, sorted; nil when nothing is missing.
func missingPrereqs(tools, headers map[string]string) []string {
	var missing []string
	for tool, pkg := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool+" (Debian package "+pkg+")")
		}
	}
	for header, pkg := range headers {
		if _, err := os.Stat(header); err != nil {
			missing = append(missing, header+" (Debian package "+pkg+")")
		}
	}
	slices.Sort(missing)
	return missing
}

// prereqError says what a component's build lacks, all at once.
func prereqError(component string, missing []string) error {
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("building %s needs %s; scripts/setup.sh installs them", component, strings.Join(missing, ", "))
}

// calicoBPFRecipe builds the calico-ebpf component.
func calicoBPFRecipe() recipe { return plainRecipe("calico-ebpf", buildCalicoBPF) }

// buildCalicoBPF compiles the BPF objects in a writable copy of the module and packs them.
func buildCalicoBPF(ctx context.Context, log io.Writer, comp Component, scratch, out string) error {
	tools := map[string]string{"clang": "clang", "llc": "llvm", "make": "make", "gcc": "gcc"}
	if err := prereqError(CalicoBPF, missingPrereqs(tools, nil)); err != nil {
		return err
	}
	src, err := writableModule(ctx, log, comp, scratch)
	if err != nil {
		return err
	}
	gpl := filepath.Join(src, "felix", "bpf-gpl")
	if err := patchCalicoCTLB(log, gpl); err != nil {
		return err
	}
	if err := compileCalicoObjects(ctx, log, gpl); err != nil {
		return err
	}
	if err := packBPF(filepath.Join(gpl, "bin"), filepath.Join(out, CalicoBPFArchive)); err != nil {
		return fmt.Errorf("pack calico bpf objects: %w", err)
	}
	fmt.Fprintf(log, "# packed %s\n", CalicoBPFArchive)
	return nil
}

// buildLibbpf builds the static libbpf bundled with the module's BPF sources, which felix's
// cgo package links (felix/bpf/libbpf).
func buildLibbpf(ctx context.Context, log io.Writer, src string) error {
	// The Makefile writes into OBJDIR before any rule creates it when run in parallel.
	libbpf := filepath.Join(src, "felix", "bpf-gpl", "include", "libbpf", "src")
	if err := os.MkdirAll(filepath.Join(libbpf, runtime.GOARCH), 0o755); err != nil {
		return fmt.Errorf("build libbpf: %w", err)
	}
	if err := runMake(ctx, log, libbpf, "BUILD_STATIC_ONLY=1", "OBJDIR="+runtime.GOARCH); err != nil {
		return fmt.Errorf("build libbpf: %w", err)
	}
	return nil
}

// calicoCTLBFile is the connect-time load balancer's program for IPv4 addresses in IPv6
// sockets, and calicoCTLBTailCalls the tail calls this build removes from it.
const calicoCTLBFile = "connect_balancer_v46.c"

func calicoCTLBTailCalls() []string {
	return []string{
		"bpf_tail_call(ctx, &cali_ctlb_progs, PROG_INDEX_V6_SENDMSG);",
		"bpf_tail_call(ctx, &cali_ctlb_progs, PROG_INDEX_V6_RECVMSG);",
	}
}

// patchCalicoCTLB is the one change the sources need to run on this kernel: since Linux 6.12
// a program may not tail-call through a program array that a program of another attach type
// uses, and the object's connect, sendmsg and recvmsg programs all jump through
// cali_ctlb_progs to their IPv6 counterparts, so loading the second fails with EINVAL and felix
// stops (Calico split the map in three after this branch, projectcalico/calico#11399). With
// IPv6 off, the only way calico-ebpf runs, felix removes that map and the tail calls fall
// through anyway: dropping the sendmsg and recvmsg ones changes nothing else.
func patchCalicoCTLB(log io.Writer, gpl string) error {
	path := filepath.Join(gpl, calicoCTLBFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("patch calico's connect-time load balancer: %w", err)
	}
	text := string(b)
	for _, call := range calicoCTLBTailCalls() {
		if n := strings.Count(text, call); n != 1 {
			return fmt.Errorf("patch calico's connect-time load balancer: %s has %q %d times, expected once", calicoCTLBFile, call, n)
		}
		text = strings.Replace(text, call, "/* cnibench: no tail call to the IPv6 program (IPv4 only) */", 1)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return fmt.Errorf("patch calico's connect-time load balancer: %w", err)
	}
	fmt.Fprintf(log, "# %s: removed %d tail calls\n", calicoCTLBFile, len(calicoCTLBTailCalls()))
	return nil
}

// compileCalicoObjects runs the module's own Makefile for the objects felix loads here. The
// module zip drops the exec bits of the scripts the Makefile runs.
func compileCalicoObjects(ctx context.Context, log io.Writer, gpl string) error {
	for _, script := range []string{"list-objs", "list-ut-objs", "calculate-flags"} {
		if err := os.Chmod(filepath.Join(gpl, script), 0o755); err != nil {
			return fmt.Errorf("calico bpf sources: %w", err)
		}
	}
	list, err := exec.CommandContext(ctx, filepath.Join(gpl, "list-objs")).Output()
	if err != nil {
		return fmt.Errorf("list calico bpf objects: %w", err)
	}
	objs := calicoBPFAlways()
	for _, o := range strings.Fields(string(list)) {
		if containsAll(o, calicoBPFObjectFilter()) {
			objs = append(objs, o)
		}
	}
	if len(objs) == len(calicoBPFAlways()) {
		return errors.New("list calico bpf objects: none matches " + strings.Join(calicoBPFObjectFilter(), " and "))
	}
	fmt.Fprintf(log, "# %d calico bpf objects\n", len(objs))
	if err := runMake(ctx, log, gpl, objs...); err != nil {
		return fmt.Errorf("compile calico bpf objects: %w", err)
	}
	return nil
}

// containsAll says whether s contains every one of parts.
func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// runMake runs make with one job per CPU in dir, in its own process group like the go builds.
func runMake(ctx context.Context, log io.Writer, dir string, args ...string) error {
	full := append([]string{fmt.Sprintf("-j%d", runtime.NumCPU())}, args...)
	fmt.Fprintf(log, "\n$ (cd %s && make %s)\n", dir, strings.Join(full, " "))
	cmd := exec.CommandContext(ctx, "make", full...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = log, log
	return runGroup(cmd, log)
}
