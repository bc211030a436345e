//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/cluster"
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
	// A value of node 2's own that no other namespace has: the node probe must read it there.
	spec := readSpec(t, runCluster)
	somaxconn := map[int]string{1: nodeSysctl(ctx, t, spec.NodeNetns(1), "net/core/somaxconn"), 2: "4242"}
	restore := setNodeSysctl(ctx, t, spec.NodeNetns(2), "net/core/somaxconn", somaxconn[2])
	doc := runSuite(ctx, t, strings.Replace(tuningSuite, "%s", profile, 1), filepath.Join(dir, "tuning.yaml"), filepath.Join(dir, "tuning.db"))
	restore()
	if doc.Run.Status != "complete" {
		t.Errorf("run status %q", doc.Run.Status)
	}
	checkNodeProbe(ctx, t, spec, doc, somaxconn)
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

// nodeSysctl reads a sysctl in a node's network namespace.
func nodeSysctl(ctx context.Context, t *testing.T, netns, path string) string {
	t.Helper()
	v, err := runCmd(ctx, "ip", "netns", "exec", netns, "cat", "/proc/sys/"+path)
	if err != nil {
		t.Fatalf("read %s in %s: %v", path, netns, err)
	}
	return strings.TrimSpace(v)
}

// setNodeSysctl writes a sysctl in a node's network namespace and returns what restores it.
func setNodeSysctl(ctx context.Context, t *testing.T, netns, path, value string) func() {
	t.Helper()
	before := nodeSysctl(ctx, t, netns, path)
	set := func(v string) error {
		_, err := runCmd(ctx, "ip", "netns", "exec", netns, "sh", "-c", "echo "+v+" > /proc/sys/"+path)
		return err
	}
	if err := set(value); err != nil {
		t.Fatalf("set %s in %s: %v", path, netns, err)
	}
	return func() {
		if err := set(before); err != nil {
			t.Errorf("restore %s in %s: %v", path, netns, err)
		}
	}
}

// checkNodeProbe checks each target's node facts against the nodes' namespaces: each node's
// somaxconn as the test reads it there (node 2's set by setNodeSysctl), each node's uplink
// the device and MTU of its route to the other node, the pods' devices found.
func checkNodeProbe(ctx context.Context, t *testing.T, spec cluster.Spec, doc runDoc, somaxconn map[int]string) {
	t.Helper()
	nodes := map[string]int{spec.NodeName(1): 1, spec.NodeName(2): 2}
	for _, tg := range doc.Targets {
		fp := tg.Fingerprint
		a, b := nodes[fp["node_a"]], nodes[fp["node_b"]]
		if a == 0 || b == 0 || a == b {
			t.Errorf("target %s: nodes %q and %q, want node1 and node2", tg.Name, fp["node_a"], fp["node_b"])
			continue
		}
		want := map[string]string{}
		for prefix, ends := range map[string][2]int{"node_a": {a, b}, "node_b": {b, a}} {
			want[prefix+"_sysctl_net.core.somaxconn"] = somaxconn[ends[0]]
			ns := spec.NodeNetns(ends[0])
			route, err := runCmd(ctx, "ip", "-n", ns, "-o", "route", "get", spec.Plan().NodeIP(ends[1]).String())
			dev := regexp.MustCompile(` dev (\S+)`).FindStringSubmatch(route)
			if err != nil || dev == nil {
				t.Fatalf("route from node%d to node%d: %v %q", ends[0], ends[1], err, route)
			}
			link, _ := runCmd(ctx, "ip", "-n", ns, "-o", "link", "show", "dev", dev[1])
			mtu := regexp.MustCompile(` mtu (\d+)`).FindStringSubmatch(link)
			if mtu == nil {
				t.Fatalf("link %s of node%d: %q", dev[1], ends[0], link)
			}
			want[prefix+"_uplink_interface"], want[prefix+"_uplink_mtu"] = dev[1], mtu[1]
			for _, k := range []string{"_local_pods_interface", "_remote_pods_interface", "_uplink_generic_receive_offload", "_uplink_driver"} {
				if fp[prefix+k] == "" {
					t.Errorf("target %s: no %s in the fingerprint", tg.Name, prefix+k)
				}
			}
		}
		for k, v := range want {
			if fp[k] != v {
				t.Errorf("target %s: fingerprint %s = %q, want %q (the node probe)", tg.Name, k, fp[k], v)
			}
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
