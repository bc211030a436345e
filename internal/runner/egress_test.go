package runner

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/lab"
)

// A target reaches the external host, and its agent, at the host's address of the target's
// family; a host without one is refused, naming the setting.
func TestExternalHostOfFamily(t *testing.T) {
	local := externalHostOf(&External{Control: "10.200.0.200:25199", Direct: "10.200.0.200", ViaGateway: "10.200.0.201",
		Direct6: "fdcb:0:200::200", ViaGateway6: "fdcb:0:200::201", GatewayNode: "node2"})
	for family, want := range map[string][3]string{
		lab.IPv4: {"10.200.0.200:25199", "10.200.0.200", "10.200.0.201"},
		lab.IPv6: {"[fdcb:0:200::200]:25199", "fdcb:0:200::200", "fdcb:0:200::201"},
	} {
		e, err := local.ofFamily(family)
		if err != nil || e.control != want[0] || e.direct != want[1] || e.viaGateway != want[2] || e.gatewayNode != "node2" {
			t.Errorf("%s: %+v, %v; want agent, direct and gateway addresses %q", family, e, err, want)
		}
	}
	if local.direct != "10.200.0.200" {
		t.Errorf("ofFamily changed the host it was asked of: %+v", local)
	}
	// An IPv4 cluster's host, or one of a cluster created before the host had IPv6.
	v4 := externalHostOf(&External{Control: "10.200.0.200:25199", Direct: "10.200.0.200", ViaGateway: "10.200.0.201"})
	if _, err := v4.ofFamily(lab.IPv6); err == nil || !strings.Contains(err.Error(), "external: ") || !strings.Contains(err.Error(), "ipv6 address") {
		t.Errorf("IPv6 traffic to an IPv4 host: %v", err)
	}
	// A user's host serves its address's family, and a name either.
	for addr, fams := range map[string][]string{"[fd00:1::5]:7000": {lab.IPv6}, "192.0.2.5:7000": {lab.IPv4}, "ext.example:7000": {lab.IPv4, lab.IPv6}} {
		host := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSuffix(addr, ":7000"), "["), "]")
		d4, d6 := byFamily(host)
		e := externalHostOf(&External{Control: addr, Direct: d4, Direct6: d6})
		for _, f := range []string{lab.IPv4, lab.IPv6} {
			got, err := e.ofFamily(f)
			served := err == nil
			if served != (len(fams) == 2 || fams[0] == f) {
				t.Errorf("%s over %s: %+v, %v; want served %v", addr, f, got, err, !served)
			} else if served && (got.control != addr || got.direct != host) {
				t.Errorf("%s over %s: agent %s, direct %s", addr, f, got.control, got.direct)
			}
		}
	}
}

// The gateway's source is its address of the traffic's family: the label's when it is one,
// else its InternalIP of that family; a pod's node address likewise.
func TestGatewayAndHostOfFamily(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node2", Labels: map[string]string{kube.LabelEgressGateway: "true"}},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.200.0.12"}, {Type: corev1.NodeInternalIP, Address: "fdcb:0:200::12"}}}}
	c := &kube.Client{CS: fake.NewClientset(node)}
	for family, want := range map[string]string{lab.IPv4: "10.200.0.12", lab.IPv6: "fdcb:0:200::12"} {
		if name, src, err := gatewayOf(context.Background(), c, family); err != nil || name != "node2" || src != want {
			t.Errorf("%s: gateway %s at %s (%v), want node2 at %s", family, name, src, err, want)
		}
	}
	node.Labels[kube.LabelEgressGateway] = "192.0.2.9"
	node.Status.Addresses = node.Status.Addresses[:1]
	c = &kube.Client{CS: fake.NewClientset(node)}
	if _, src, _ := gatewayOf(context.Background(), c, lab.IPv4); src != "192.0.2.9" {
		t.Errorf("IPv4 source with an address in the label: %s", src)
	}
	if _, _, err := gatewayOf(context.Background(), c, lab.IPv6); err == nil || !strings.Contains(err.Error(), "no InternalIP of ipv6") {
		t.Errorf("IPv6 source of an IPv4 node: %v", err)
	}
	pod := &corev1.Pod{Status: corev1.PodStatus{HostIP: "10.200.0.11", HostIPs: []corev1.HostIP{{IP: "10.200.0.11"}, {IP: "fdcb:0:200::11"}}}}
	if hostIPOf(pod, lab.IPv6) != "fdcb:0:200::11" || hostIPOf(pod, lab.IPv4) != "10.200.0.11" {
		t.Errorf("the pod's node addresses: %s, %s", hostIPOf(pod, lab.IPv4), hostIPOf(pod, lab.IPv6))
	}
}
