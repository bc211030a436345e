//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// tuningSuite compares a builtin profile of unsafe sysctls (a privileged namespace, the
// kubelet's allowedUnsafeSysctls), one of offloads (CAP_NET_ADMIN in the pods, the nodes' ends
// of their veths), a user's file of safe sysctls, and the kernel's own values.
const tuningSuite = `
paths: [cross-node]
tunings: [default, latency, no-offloads, %s]
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
	offloadsBefore := hostOffloads(t)
	doc := runSuite(ctx, t, strings.Replace(tuningSuite, "%s", profile, 1), filepath.Join(dir, "tuning.yaml"), filepath.Join(dir, "tuning.db"))
	if doc.Run.Status != "complete" {
		t.Errorf("run status %q", doc.Run.Status)
	}
	want := map[string]map[string]string{
		"local.default": {"tuning": "default", "pod_sysctl_net.ipv4.tcp_autocorking": "1"},
		"local.latency": {"tuning": "latency", "pod_sysctl_net.ipv4.tcp_autocorking": "0", "pod_sysctl_net.ipv4.tcp_notsent_lowat": "16384"},
		"local.wide":    {"tuning": "wide", "pod_sysctl_net.ipv4.tcp_wmem": "4096 65536 16777216", "pod_sysctl_net.ipv4.tcp_autocorking": "1"},
		// Both ends of the pods' veths, read by the fingerprint inside the client pod and on
		// its node; the others keep the veth's defaults.
		"local.no-offloads": {"tuning": "no-offloads", "pod_tcp_segmentation_offload": "off", "pod_generic_segmentation_offload": "off",
			"pod_peer_tcp_segmentation_offload": "off", "pod_peer_generic_segmentation_offload": "off", "pod_generic_receive_offload": "off"},
	}
	for _, name := range []string{"local.default", "local.latency", "local.wide"} {
		want[name]["pod_tcp_segmentation_offload"] = "on"
		want[name]["pod_generic_segmentation_offload"] = "on"
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
	after := hostOffloads(t)
	for dev, features := range offloadsBefore {
		if after[dev] != features && after[dev] != "" {
			t.Errorf("the root namespace's %s changed its offloads:\n%s\n->\n%s", dev, features, after[dev])
		}
	}
}

// hostOffloads reads `ethtool -k` of every link of the root namespace but the cluster's own
// veth ends (cnb-*), which come and go with clusters.
func hostOffloads(t *testing.T) map[string]string {
	t.Helper()
	links, err := os.ReadDir("/sys/class/net")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, l := range links {
		if strings.HasPrefix(l.Name(), "cnb") {
			continue
		}
		if b, err := exec.Command("ethtool", "-k", l.Name()).Output(); err == nil {
			out[l.Name()] = string(b)
		}
	}
	return out
}

// readSysctl reads one of the host's sysctls, blanks collapsed.
func readSysctl(t *testing.T, path string) string {
	b, err := os.ReadFile(filepath.Join("/proc/sys", path))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(strings.Fields(string(b)), " ")
}
