//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tuningSuite compares a builtin profile of unsafe sysctls (a privileged namespace, the
// kubelet's allowedUnsafeSysctls), a user's file of safe ones, and the kernel's own values.
const tuningSuite = `
paths: [cross-node]
tunings: [default, latency, %s]
workloads: [{kind: tcp-stream}]
repetitions: 2
duration: 1s
warmup: off
`

// runTunings runs tuningSuite on the shared cluster and checks each target's fingerprint for
// the values read inside its pods, and that the host's own values did not move.
func runTunings(ctx context.Context, t *testing.T, dir string) {
	profile := filepath.Join(dir, "wide.yaml")
	if err := os.WriteFile(profile, []byte("name: wide\nsysctls:\n  net.ipv4.tcp_wmem: 4096 65536 16777216\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hostBefore := readSysctl(t, "net/ipv4/tcp_wmem") + "|" + readSysctl(t, "net/ipv4/tcp_autocorking")
	doc := runSuite(ctx, t, strings.Replace(tuningSuite, "%s", profile, 1), filepath.Join(dir, "tuning.yaml"), filepath.Join(dir, "tuning.db"))
	if doc.Run.Status != "complete" {
		t.Errorf("run status %q", doc.Run.Status)
	}
	want := map[string]map[string]string{
		"local.default": {"tuning": "default", "pod_sysctl_net.ipv4.tcp_autocorking": "1"},
		"local.latency": {"tuning": "latency", "pod_sysctl_net.ipv4.tcp_autocorking": "0", "pod_sysctl_net.ipv4.tcp_notsent_lowat": "16384"},
		"local.wide":    {"tuning": "wide", "pod_sysctl_net.ipv4.tcp_wmem": "4096 65536 16777216", "pod_sysctl_net.ipv4.tcp_autocorking": "1"},
	}
	for _, tg := range doc.Targets {
		for k, v := range want[tg.Name] {
			if tg.Fingerprint[k] != v {
				t.Errorf("target %s: fingerprint %s = %q, want %q", tg.Name, k, tg.Fingerprint[k], v)
			}
		}
		delete(want, tg.Name)
	}
	if len(want) > 0 {
		t.Errorf("targets missing from the run: %v", want)
	}
	for _, r := range doc.Rows {
		if r.Metric == "throughput_gbps" && (r.N != 2 || r.Mean <= 0) {
			t.Errorf("%s %s: throughput n=%d mean %g", r.Target, r.Workload, r.N, r.Mean)
		}
	}
	if after := readSysctl(t, "net/ipv4/tcp_wmem") + "|" + readSysctl(t, "net/ipv4/tcp_autocorking"); after != hostBefore {
		t.Errorf("the host's tcp_wmem|tcp_autocorking went from %q to %q", hostBefore, after)
	}
}

// readSysctl reads one of the host's sysctls, blanks collapsed.
func readSysctl(t *testing.T, path string) string {
	b, err := os.ReadFile(filepath.Join("/proc/sys", path))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(strings.Fields(string(b)), " ")
}
