package cluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestKubeletSysctlMounts runs the kubelet's sysctl mounts with a stand-in kubelet that sets
// kernel.panic as a real one does: it must see its own value while the host keeps its own.
func TestKubeletSysctlMounts(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for mount namespaces (CI runs as root)")
	}
	const panicPath = "/proc/sys/kernel/panic"
	host := readTrim(t, panicPath)
	n, err := strconv.Atoi(host)
	if err != nil {
		t.Fatalf("kernel.panic %q: %v", host, err)
	}
	want := strconv.Itoa(n + 7)
	// Should the binds fail, the stand-in writes the real sysctl: put it back.
	t.Cleanup(func() {
		if readTrim(t, panicPath) != host {
			_ = os.WriteFile(panicPath, []byte(host), 0o644)
		}
	})
	dir := t.TempDir()
	if err := writeKernelTunableCopies(dir); err != nil {
		t.Fatal(err)
	}
	for _, p := range kubeletKernelTunables() {
		hostVal, err := os.ReadFile(filepath.Join("/proc/sys", p))
		if err != nil {
			continue
		}
		if got := readTrim(t, filepath.Join(dir, strings.ReplaceAll(p, "/", "."))); got != strings.TrimSpace(string(hostVal)) {
			t.Errorf("copy of %s holds %q, the host %q", p, got, hostVal)
		}
	}
	kubelet := filepath.Join(t.TempDir(), "kubelet")
	if err := os.WriteFile(kubelet, []byte("#!/bin/sh\necho "+want+" > "+panicPath+" && cat "+panicPath+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("unshare", "--mount", "--propagation", "unchanged", "sh", "-c",
		kubeletSysctlMounts+`exec "$@"`, "cnb-kubelet", dir, kubelet).CombinedOutput()
	if err != nil {
		t.Fatalf("mount script: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != want {
		t.Errorf("the kubelet read back %q, want its own %s", got, want)
	}
	if got := readTrim(t, panicPath); got != host {
		t.Errorf("host kernel.panic is %s after the kubelet, was %s", got, host)
	}
	if got := readTrim(t, filepath.Join(dir, "kernel.panic")); got != want {
		t.Errorf("the copy holds %q, want the kubelet's %s", got, want)
	}
}

func readTrim(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}
