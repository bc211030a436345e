package kube

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/cnibench/cnibench/internal/tuning"
)

// RoleNodeProbe is the role of the short-lived host-network pods that read a node's own
// network settings.
const RoleNodeProbe = "node-probe"

// nodeProbeTimeout bounds one probe pod's life: its image is on the node already (the
// fixture's), and it only reads.
const nodeProbeTimeout = 90 * time.Second

// NodeSysctls are the sysctls a node probe reads: the tuning profiles' (tuning.Allowed), and
// the node-wide limits and choices they live within.
func NodeSysctls() []string {
	return append(tuning.Allowed(),
		"net.core.netdev_max_backlog",
		"net.core.rmem_max",
		"net.core.wmem_max",
		"net.ipv4.tcp_available_congestion_control",
	)
}

// nodeProbeScript reads, and never writes, a node's settings: its sysctls, then for each
// destination given as "name=address" the device the node routes it through, with that
// device's MTU, offloads and driver, and the route's own MTU where it has one (a tunnel's,
// when the device is shared with unencapsulated routes). "ip route get" and "ethtool -k/-i"
// only ask the kernel; nothing is sent.
func nodeProbeScript() string {
	return sysctlScript(NodeSysctls(), "sysctl ") +
		`for d in "$@"; do name=${d%%=*}; addr=${d#*=}; [ -n "$addr" ] || continue; ` +
		`r=$(ip -o route get "$addr" 2>/dev/null); dev=$(echo "$r" | sed -n 's/.* dev \([^ ]*\).*/\1/p'); [ -n "$dev" ] || continue; ` +
		`echo "dev $name $dev"; echo "$r" | sed -n "s/.* mtu \([0-9]*\).*/rmtu $name \1/p"; ` +
		`ip -o link show dev "$dev" | sed -n "s/.* mtu \([0-9]*\).*/mtu $name \1/p"; ` +
		`{ ethtool -k "$dev"; ethtool -i "$dev"; } 2>/dev/null | sed "s/^/feat $name /"; done; true`
}

// sysctlScript prints "PREFIXname value" for each sysctl the kernel has: one line each, the
// name first, since a value may hold blanks.
func sysctlScript(keys []string, prefix string) string {
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "v=$(cat /proc/sys/%s 2>/dev/null) && echo %q \"$v\"; ", strings.ReplaceAll(k, ".", "/"), prefix+k)
	}
	return b.String()
}

// parseNodeProbe turns a probe's output into fingerprint facts under prefix ("node_a"):
// prefix_sysctl_NAME, and for each destination prefix_NAME_interface, _mtu, _route_mtu,
// _driver and the offloads interfaceFacts records.
func parseNodeProbe(out, prefix string) map[string]string {
	fp := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		kind, rest, _ := strings.Cut(line, " ")
		name, value, ok := strings.Cut(rest, " ")
		if !ok {
			continue
		}
		switch kind {
		case "sysctl":
			fp[prefix+"_sysctl_"+name] = tuning.Normalize(value)
		case "dev":
			fp[prefix+"_"+name+"_interface"] = value
		case "mtu":
			fp[prefix+"_"+name+"_mtu"] = value
		case "rmtu":
			fp[prefix+"_"+name+"_route_mtu"] = value
		case "feat":
			if k, v, ok := offloadFact(value); ok {
				fp[prefix+"_"+name+"_"+k] = v
			} else if k, v, ok := strings.Cut(value, ": "); ok && k == "driver" {
				fp[prefix+"_"+name+"_driver"] = strings.TrimSpace(v)
			}
		}
	}
	return fp
}

// offloadFact reads one line of `ethtool -k` ("generic-receive-offload: on [fixed]") into
// the fingerprint's key and value for the offloads cnibench records.
func offloadFact(line string) (key, value string, ok bool) {
	fields := strings.Fields(line)
	if len(fields) < 2 {
		return "", "", false
	}
	switch k := strings.TrimSuffix(fields[0], ":"); k {
	case "tcp-segmentation-offload", "generic-segmentation-offload", "generic-receive-offload", "tx-checksumming", "rx-checksumming":
		return strings.ReplaceAll(k, "-", "_"), fields[1], true
	}
	return "", "", false
}

// nodeProbe is one node to probe: its fingerprint prefix and the destinations whose routes
// it follows.
type nodeProbe struct {
	prefix, node string
	dests        []string // "name=address"
}

// nodeProbes plans the probes of a fixture's nodes A and B: each follows its route to the
// other node (uplink), to a pod of its own (local_pods) and to a pod on the other node
// (remote_pods), in the fixture's family. One node (a single-node run) has no peer.
func (c *Client) nodeProbes(ctx context.Context, f *Fixture) []nodeProbe {
	a, b := f.Spec.Placement.NodeA, f.Spec.Placement.NodeB
	podA := firstPodIP(f, RoleClient, RoleServerA, RoleLocal)
	podB := firstPodIP(f, RoleServerB)
	out := []nodeProbe{{prefix: "node_a", node: a, dests: []string{"local_pods=" + podA}}}
	if b == "" || b == a {
		return out
	}
	out[0].dests = append(out[0].dests, "uplink="+c.nodeIP(ctx, b, f.Family()), "remote_pods="+podB)
	return append(out, nodeProbe{prefix: "node_b", node: b,
		dests: []string{"uplink=" + c.nodeIP(ctx, a, f.Family()), "local_pods=" + podB, "remote_pods=" + podA}})
}

// firstPodIP is the address of pair 0's pod of the first role the fixture has.
func firstPodIP(f *Fixture, roles ...string) string {
	for _, r := range roles {
		if ip := f.PodIP(r, 0); ip != "" {
			return ip
		}
	}
	return ""
}

// nodeIP is a node's first InternalIP of family, "" when it has none or cannot be read.
func (c *Client) nodeIP(ctx context.Context, name, family string) string {
	n, err := c.CS.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	for _, ip := range internalIPs(*n) {
		if FamilyOf(ip) == family {
			return ip
		}
	}
	return ""
}

// ProbeNodes reads the network settings of the fixture's nodes from a host-network pod on
// each, read-only (sysctls; the devices of the routes to the other node and to the pods on
// both, with MTU, offloads and driver), and returns them as fingerprint facts ("node_a_..."):
// a remote cluster's tuning is recorded, never changed. It reads in the fixture's own
// host-network pods where it has them, else in pods that run once, in the fixture's namespace
// with its image, deleted as soon as their output is read.
func (c *Client) ProbeNodes(ctx context.Context, f *Fixture) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, nodeProbeTimeout)
	defer cancel()
	probes := c.nodeProbes(ctx, f)
	facts := make([]map[string]string, len(probes))
	g, gctx := errgroup.WithContext(ctx)
	for i, p := range probes {
		g.Go(func() error {
			out, err := c.probeNode(gctx, f, p)
			facts[i] = parseNodeProbe(out, p.prefix)
			return err
		})
	}
	err := g.Wait()
	all := map[string]string{}
	for _, m := range facts {
		maps.Copy(all, m)
	}
	return all, err
}

// probeNode returns the output of one node's probe: run in the fixture's host-network pod on
// the node when it has one (an exec costs a tenth of a pod's start), else in a pod of its own.
func (c *Client) probeNode(ctx context.Context, f *Fixture, p nodeProbe) (string, error) {
	for _, role := range hostRoles {
		if pod := f.Pod(role, 0); pod != nil && pod.Spec.NodeName == p.node {
			out, err := c.Exec(ctx, pod.Namespace, pod.Name, pod.Spec.Containers[0].Name, probeArgv(p))
			if err != nil {
				return "", fmt.Errorf("probe node %s in pod %s: %w", p.node, pod.Name, err)
			}
			return string(out), nil
		}
	}
	return c.runProbe(ctx, f.Spec, p)
}

// probeArgv is the command that probes a node.
func probeArgv(p nodeProbe) []string {
	return append([]string{"sh", "-c", nodeProbeScript(), "probe"}, p.dests...)
}

// runProbe runs one node's probe pod to its end and returns its output.
func (c *Client) runProbe(ctx context.Context, spec FixtureSpec, p nodeProbe) (string, error) {
	pod := spec.probePod(p)
	pods := c.CS.CoreV1().Pods(spec.Namespace)
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("probe node %s: %w", p.node, err)
	}
	defer func() {
		// Its own context: the probe's may have run out.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		grace := int64(0)
		// An error leaves the pod to the run's teardown, which deletes every pod of the run.
		_ = pods.Delete(dctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
	}()
	var phase corev1.PodPhase
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		got, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		phase = got.Status.Phase
		return phase == corev1.PodSucceeded || phase == corev1.PodFailed, nil
	})
	if err != nil {
		return "", fmt.Errorf("probe node %s: pod %s still %s: %w", p.node, pod.Name, phase, err)
	}
	out, err := pods.GetLogs(pod.Name, &corev1.PodLogOptions{Container: RoleNodeProbe}).DoRaw(ctx)
	if err != nil {
		return "", fmt.Errorf("probe node %s: read the output of pod %s: %w", p.node, pod.Name, err)
	}
	if phase == corev1.PodFailed {
		return string(out), fmt.Errorf("probe node %s: pod %s failed: %s", p.node, pod.Name, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// probePod is the pod that probes one node: on its host network, without privileges or
// capabilities, run once.
func (s FixtureSpec) probePod(p nodeProbe) *corev1.Pod {
	name := "cnibench-" + RoleNodeProbe + "-" + strings.TrimPrefix(p.prefix, "node_")
	pod := s.podSkeleton(name, RoleNodeProbe, p.node, 0, corev1.RestartPolicyNever)
	pod.Spec.HostNetwork = true
	pod.Spec.Containers = []corev1.Container{{Name: RoleNodeProbe, Image: s.Image, ImagePullPolicy: corev1.PullIfNotPresent, Command: probeArgv(p),
		SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: new(bool),
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}}
	return pod
}
