package hostsnap

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
)

// testPrefix marks every object the root test creates, so leftovers of a
// crashed run are recognisable and cannot be confused with cnibench's.
const testPrefix = "cnbhs"

// undoStack runs cleanup steps in reverse order exactly once, either
// explicitly (before the final snapshot) or from t.Cleanup when the test
// fails part-way.
type undoStack struct {
	t     *testing.T
	steps []undoStep
}

type undoStep struct {
	what string
	fn   func() error
}

func (u *undoStack) push(what string, fn func() error) {
	u.steps = append(u.steps, undoStep{what, fn})
}

func (u *undoStack) run() {
	for len(u.steps) > 0 {
		s := u.steps[len(u.steps)-1]
		u.steps = u.steps[:len(u.steps)-1]
		if err := s.fn(); err != nil {
			u.t.Errorf("cleanup %s: %v", s.what, err)
		}
	}
}

// TestTakeDetectsHostObjects proves that a snapshot can fail: every kind of
// object cnibench creates must show up in Diff, and removing them must make
// the snapshot equal to the original again.
func TestTakeDetectsHostObjects(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("creates namespaces, links, routes, nft tables, cgroups and mounts: needs root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	first := mustTake(ctx, t)
	for _, c := range first.categories() {
		for _, e := range *c.entries {
			if strings.Contains(e, testPrefix) {
				t.Fatalf("host already has a %s object, leftover of an earlier run? %q", testPrefix, e)
			}
		}
	}

	tmp := t.TempDir() // registered before undo so it is removed after the unmount
	undo := &undoStack{t: t}
	t.Cleanup(undo.run)

	want := createTestObjects(ctx, t, undo, tmp)

	second := mustTake(ctx, t)
	diff := Diff(first, second)
	for _, w := range want {
		if !hasPrefixLine(diff, w) {
			t.Errorf("Diff(before, with objects) lacks a line starting with %q", w)
		}
	}
	if t.Failed() {
		t.Logf("Diff(before, with objects):\n%s", strings.Join(diff, "\n"))
	}

	undo.run()

	// Kernel teardown of a namespace is asynchronous and the host may have
	// short-lived activity, so allow a few seconds for the state to settle
	// before declaring a leak.
	var last []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		last = withoutOthersProcesses(Diff(first, mustTake(ctx, t)))
		if len(last) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(last) != 0 {
		t.Fatalf("Diff(before, after cleanup) is not empty:\n%s", strings.Join(last, "\n"))
	}
}

// withoutOthersProcesses drops the processes this test did not start: `go test ./...` runs
// other packages' tests beside it, whose servers and clients (a PostgreSQL backend of the
// store's tests, a sockperf) come and go with cnibench in their command lines. Any other kind
// of object left behind still fails this test, whichever test made it.
func withoutOthersProcesses(diff []string) []string {
	var out []string
	for _, line := range diff {
		if (strings.HasPrefix(line, "- process ") || strings.HasPrefix(line, "+ process ")) && !strings.Contains(line, testPrefix) {
			continue
		}
		out = append(out, line)
	}
	return out
}

// createTestObjects creates one object of each kind, registers its removal
// and returns the Diff line prefixes that must report them.
func createTestObjects(ctx context.Context, t *testing.T, undo *undoStack, tmp string) []string {
	t.Helper()
	var want []string

	// Named network namespace. `ip netns add` also turns /run/netns into a
	// bind mount (and may create it); undo that too or the host changed.
	netnsExisted := exists(netnsDir)
	netnsWasMount, err := isMountPoint(netnsDir)
	mustDo(t, err)
	undo.push("restore "+netnsDir, func() error { return restoreNetnsDir(netnsExisted, netnsWasMount) })
	mustRun(ctx, t, "ip", "netns", "add", testPrefix+"-test")
	undo.push("netns", func() error { return runQuiet(ctx, "ip", "netns", "del", testPrefix+"-test") })
	want = append(want,
		"+ netns "+testPrefix+"-test",
		"+ mount "+netnsDir+"/"+testPrefix+"-test nsfs",
		"+ nsfs-mounts ",
	)

	// A veth pair without addresses, left down: it cannot carry traffic.
	// veth rather than dummy because loading the dummy driver on demand
	// creates an extra dummy0 on many kernels.
	mustRun(ctx, t, "ip", "link", "add", testPrefix+"0", "type", "veth", "peer", "name", testPrefix+"1")
	undo.push("veth", func() error { return runQuiet(ctx, "ip", "link", "del", testPrefix+"0") })
	want = append(want, "+ link "+testPrefix+"0 (veth)", "+ link "+testPrefix+"1 (veth)")
	want = append(want, attachTestXDP(t, undo))

	// An unreachable route only drops traffic to a range nobody uses.
	mustRun(ctx, t, "ip", "route", "add", "unreachable", "10.255.77.0/24")
	undo.push("route", func() error { return runQuiet(ctx, "ip", "route", "del", "unreachable", "10.255.77.0/24") })
	want = append(want, "+ route unreachable 10.255.77.0/24")

	// An nft table with a regular (unhooked) chain: sees no packets.
	if lookTool("nft") != "" {
		mustRun(ctx, t, "nft", "add", "table", "inet", testPrefix)
		undo.push("nft table", func() error { return runQuiet(ctx, "nft", "delete", "table", "inet", testPrefix) })
		mustRun(ctx, t, "nft", "add", "chain", "inet", testPrefix, "c")
		want = append(want, "+ nft table inet "+testPrefix+" (sha256:")
	}

	// A cgroup with a child, to show the recursive walk.
	cgDir, cgLabel := filepath.Join(cgroupRoot, "pids"), "pids/"
	if !exists(cgDir) {
		cgDir, cgLabel = cgroupRoot, ""
	}
	top := filepath.Join(cgDir, testPrefix)
	mustDo(t, os.Mkdir(top, 0o755))
	undo.push("cgroup", func() error { return os.Remove(top) })
	mustDo(t, os.Mkdir(filepath.Join(top, "inner"), 0o755))
	undo.push("cgroup child", func() error { return os.Remove(filepath.Join(top, "inner")) })
	want = append(want, "+ cgroup "+cgLabel+testPrefix, "+ cgroup "+cgLabel+testPrefix+"/inner")

	// A tmpfs mount.
	mustDo(t, syscall.Mount("tmpfs", tmp, "tmpfs", 0, "size=1m"))
	undo.push("tmpfs", func() error { return syscall.Unmount(tmp, 0) })
	want = append(want, "+ mount "+tmp+" tmpfs")

	// A process in an anonymous network namespace, the shape of a pod
	// sandbox; argv[0] carries the prefix because sleep rejects extra args.
	sleep := exec.Command(lookTool("sleep"), "600")
	sleep.Args = []string{testPrefix + "-sleep", "600"}
	sleep.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
	mustDo(t, sleep.Start())
	undo.push("sleep", func() error {
		if err := sleep.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
			return err
		}
		_ = sleep.Wait() // "signal: killed" is the expected outcome
		return nil
	})
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", sleep.Process.Pid))
	mustDo(t, err)
	ino := strings.TrimSuffix(strings.TrimPrefix(ns, "net:["), "]")
	want = append(want,
		"+ process sleep: "+testPrefix+"-sleep 600",
		fmt.Sprintf("+ netns-inode %s (held by pid %d sleep)", ino, sleep.Process.Pid),
	)
	return want
}

// restoreNetnsDir undoes the side effects of the first `ip netns add` on a
// host: the /run/netns self bind mount and the directory itself. It leaves
// them alone if anything else has a namespace there.
func restoreNetnsDir(existed, wasMount bool) error {
	ents, err := os.ReadDir(netnsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list %s: %w", netnsDir, err)
	}
	if len(ents) > 0 {
		return nil
	}
	isMount, err := isMountPoint(netnsDir)
	if err != nil {
		return err
	}
	if !wasMount && isMount {
		if err := syscall.Unmount(netnsDir, 0); err != nil {
			return fmt.Errorf("unmount %s: %w", netnsDir, err)
		}
	}
	if !existed {
		if err := os.Remove(netnsDir); err != nil {
			return fmt.Errorf("remove %s: %w", netnsDir, err)
		}
	}
	return nil
}

func mustTake(ctx context.Context, t *testing.T) Snapshot {
	t.Helper()
	s, err := Take(ctx)
	if err != nil {
		t.Fatalf("Take: %v", err)
	}
	return s
}

func mustRun(ctx context.Context, t *testing.T, tool string, args ...string) {
	t.Helper()
	if _, err := run(ctx, tool, args...); err != nil {
		t.Fatal(err)
	}
}

func runQuiet(ctx context.Context, tool string, args ...string) error {
	_, err := run(ctx, tool, args...)
	return err
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func isMountPoint(p string) (bool, error) {
	mounts, err := readMountinfo()
	if err != nil {
		return false, err
	}
	for _, m := range mounts {
		if m.point == p {
			return true, nil
		}
	}
	return false, nil
}

func hasPrefixLine(lines []string, prefix string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}

// attachTestXDP attaches a program that passes every packet to the test's veth (down, so it
// sees none), as a datapath's program on a host link would be, and returns its Diff line.
func attachTestXDP(t *testing.T, undo *undoStack) string {
	t.Helper()
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: testPrefix + "_xdp", Type: ebpf.XDP, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 2), asm.Return()}, // XDP_PASS
	})
	mustDo(t, err)
	undo.push("xdp program", prog.Close)
	iface, err := net.InterfaceByName(testPrefix + "0")
	mustDo(t, err)
	l, err := link.AttachXDP(link.XDPOptions{Program: prog, Interface: iface.Index, Flags: link.XDPGenericMode})
	mustDo(t, err)
	undo.push("xdp link", l.Close)
	return "+ link-bpf " + testPrefix + "0 xdp generic " + testPrefix + "_xdp"
}
