package kube

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/cnibench/cnibench/internal/lab"
)

// Output of nodeProbeScript on a cilium-vxlan node of the local cluster, cut short.
const probeOutput = `sysctl net.core.somaxconn 4242
sysctl net.ipv4.tcp_rmem 4096	131072	6291456
sysctl net.ipv4.tcp_available_congestion_control reno cubic
dev uplink eth0
mtu uplink 1500
feat uplink Features for eth0:
feat uplink rx-checksumming: on
feat uplink tcp-segmentation-offload: on
feat uplink 	tx-tcp-segmentation: on
feat uplink generic-receive-offload: off
feat uplink driver: veth
feat uplink version: 1.0
dev remote_pods cilium_host
rmtu remote_pods 1450
mtu remote_pods 1500
feat remote_pods generic-segmentation-offload: on [fixed]
`

func TestParseNodeProbe(t *testing.T) {
	got := parseNodeProbe(probeOutput, "node_b")
	want := map[string]string{
		"node_b_sysctl_net.core.somaxconn":                        "4242",
		"node_b_sysctl_net.ipv4.tcp_rmem":                         "4096 131072 6291456",
		"node_b_sysctl_net.ipv4.tcp_available_congestion_control": "reno cubic",
		"node_b_uplink_interface":                                 "eth0",
		"node_b_uplink_mtu":                                       "1500",
		"node_b_uplink_rx_checksumming":                           "on",
		"node_b_uplink_tcp_segmentation_offload":                  "on",
		"node_b_uplink_generic_receive_offload":                   "off",
		"node_b_uplink_driver":                                    "veth",
		"node_b_remote_pods_interface":                            "cilium_host",
		"node_b_remote_pods_route_mtu":                            "1450",
		"node_b_remote_pods_mtu":                                  "1500",
		"node_b_remote_pods_generic_segmentation_offload":         "on",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d facts, want %d: %v", len(got), len(want), got)
	}
}

// The probe may only read: no write to /proc/sys, no ethtool -K, no ip set/add/del, and
// no sysctl -w, whatever the sysctls it reads.
func TestNodeProbeScriptOnlyReads(t *testing.T) {
	script := nodeProbeScript()
	for _, bad := range []*regexp.Regexp{
		regexp.MustCompile(`>\s*/proc`), regexp.MustCompile(`ethtool\s+-[KGLAs]`), regexp.MustCompile(`sysctl\s+-w`),
		regexp.MustCompile(`ip (-o )?(link|addr|route) (set|add|del|replace|change)`), regexp.MustCompile(`\btee\b`),
	} {
		if bad.MatchString(script) {
			t.Errorf("the probe script matches %s:\n%s", bad, script)
		}
	}
	for _, k := range NodeSysctls() {
		if !regexp.MustCompile(`/proc/sys/` + regexp.QuoteMeta(strings.ReplaceAll(k, ".", "/"))).MatchString(script) {
			t.Errorf("the probe does not read %s", k)
		}
	}
}

func TestProbePod(t *testing.T) {
	spec := FixtureSpec{Namespace: "ns", RunID: "r1", Image: "tools:1", PullSecret: "pull", TolerateTaints: true}
	p := spec.probePod(nodeProbe{prefix: "node_b", node: "w2", dests: []string{"uplink=10.0.0.1"}})
	c := p.Spec.Containers[0]
	switch {
	case p.Name != "cnibench-node-probe-b" || p.Namespace != "ns" || p.Labels[LabelRun] != "r1" || p.Labels[LabelRole] != RoleNodeProbe:
		t.Errorf("identity: %s/%s %v", p.Namespace, p.Name, p.Labels)
	case p.Spec.NodeName != "w2" || !p.Spec.HostNetwork || p.Spec.RestartPolicy != corev1.RestartPolicyNever:
		t.Errorf("placement: node %q host network %v restart %s", p.Spec.NodeName, p.Spec.HostNetwork, p.Spec.RestartPolicy)
	case len(p.Spec.Tolerations) != 1 || len(p.Spec.ImagePullSecrets) != 1 || c.Image != "tools:1":
		t.Errorf("tolerations %v, pull secrets %v, image %s", p.Spec.Tolerations, p.Spec.ImagePullSecrets, c.Image)
	case c.SecurityContext == nil || c.SecurityContext.Capabilities == nil || len(c.SecurityContext.Capabilities.Add) > 0 ||
		!slices.Equal(c.SecurityContext.Capabilities.Drop, []corev1.Capability{"ALL"}) || c.SecurityContext.Privileged != nil:
		t.Errorf("the probe must run without capabilities: %+v", c.SecurityContext)
	case c.Command[len(c.Command)-1] != "uplink=10.0.0.1":
		t.Errorf("destinations not passed: %v", c.Command)
	}
	if got := (FixtureSpec{RunID: "r1", NodeProbe: true}).namespaceLabels()[LabelPodSecurityEnforce]; got != PodSecurityPrivileged {
		t.Errorf("a namespace with the probe is labelled %q", got)
	}
}

func TestNodeProbesPlan(t *testing.T) {
	node := func(name string, ips ...string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		for _, ip := range ips {
			n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip})
		}
		return n
	}
	c := &Client{CS: fake.NewClientset(node("a", "10.0.0.1", "fd00::1"), node("b", "10.0.0.2", "fd00::2"))}
	pod := func(ips ...string) *corev1.Pod {
		p := &corev1.Pod{}
		for _, ip := range ips {
			p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: ip})
		}
		p.Status.PodIP = ips[0]
		return p
	}
	f := &Fixture{Spec: FixtureSpec{Family: lab.IPv6, Placement: Placement{NodeA: "a", NodeB: "b"}},
		Pods: map[string][]*corev1.Pod{RoleClient: {pod("10.1.1.5", "fd01::5")}, RoleServerB: {pod("10.1.2.7", "fd02::7")}}}
	got := c.nodeProbes(context.Background(), f)
	want := []nodeProbe{
		{prefix: "node_a", node: "a", dests: []string{"local_pods=fd01::5", "uplink=fd00::2", "remote_pods=fd02::7"}},
		{prefix: "node_b", node: "b", dests: []string{"uplink=fd00::1", "local_pods=fd02::7", "remote_pods=fd01::5"}},
	}
	if len(got) != 2 || !slices.Equal(got[0].dests, want[0].dests) || !slices.Equal(got[1].dests, want[1].dests) || got[1].node != "b" {
		t.Errorf("ipv6 probes %+v, want %+v", got, want)
	}
	f.Spec.Placement.NodeB = "a"
	if got := c.nodeProbes(context.Background(), f); len(got) != 1 || !slices.Equal(got[0].dests, []string{"local_pods=fd01::5"}) {
		t.Errorf("one node: %+v", got)
	}
}
