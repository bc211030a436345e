package kube

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func annotated(annotations ...map[string]string) []corev1.Node {
	var out []corev1.Node
	for _, a := range annotations {
		out = append(out, corev1.Node{ObjectMeta: metav1.ObjectMeta{Annotations: a}})
	}
	return out
}

// Each CNI is named only when every node carries its agents' annotations; a node without
// them (an agent not yet up, another CNI) leaves it unknown, never a guess.
func TestCNIFromAnnotations(t *testing.T) {
	flannel := map[string]string{flannelBackendAnnotation: "vxlan", "flannel.alpha.coreos.com/public-ip": "10.0.0.1"}
	hostGW := map[string]string{flannelBackendAnnotation: "host-gw"}
	calicoVXLAN := map[string]string{"projectcalico.org/IPv4Address": "10.0.0.1/24", calicoVXLANAnnotation: "192.168.0.1"}
	canal := map[string]string{flannelBackendAnnotation: "vxlan", "projectcalico.org/IPv4Address": "10.0.0.1/24"}
	calicoAPI := []string{"apps", calicoGroup}
	cilium := map[string]string{"network.cilium.io/ipv4-cilium-host": "10.1.0.1"}
	for _, c := range []struct {
		nodes       []corev1.Node
		groups      []string
		cni, mode   string
		whyNotWrong string
	}{
		{annotated(flannel, flannel), nil, "flannel", "backend=vxlan", ""},
		{annotated(hostGW, hostGW), nil, "flannel", "backend=host-gw", ""},
		{annotated(calicoVXLAN, calicoVXLAN), calicoAPI, "calico", "encapsulation=vxlan", ""},
		{annotated(canal, canal), nil, "canal", "backend=vxlan", ""},
		{annotated(flannel, flannel), calicoAPI, "canal", "backend=vxlan", "flannel's annotations and Calico's API: Canal, as the local cluster runs it"},
		{annotated(cilium, cilium), nil, "cilium", "", ""},
		{annotated(nil, nil), []string{ciliumGroup}, "cilium", "", "Cilium's CRDs: it annotates no node by default"},
		{annotated(flannel, nil), nil, "unknown", "", "one node without flannel's annotation"},
		{annotated(nil, nil), calicoAPI, "unknown", "", "no annotations: a CNI that writes none"},
		{nil, nil, "unknown", "", "no nodes"},
	} {
		cni, mode := cniFromAnnotations(c.nodes, c.groups)
		if cni != c.cni || mode != c.mode {
			t.Errorf("%v (%s): %s %q, want %s %q", c.nodes, c.whyNotWrong, cni, mode, c.cni, c.mode)
		}
	}
}

// The interface's MTU and offloads, and the default route's MTU where the datapath lowered it
// below the interface's.
func TestParseInterfaceFacts(t *testing.T) {
	out := "dev eth0\nmtu 9000\nroute default via 10.0.1.1 dev eth0 mtu 8950 \nFeatures for eth0:\n" +
		"tcp-segmentation-offload: on\ngeneric-receive-offload: off [fixed]\n"
	fp := map[string]string{}
	parseInterfaceFacts(out, "pod", fp)
	want := map[string]string{"pod_interface": "eth0", "pod_mtu": "9000", "pod_route_mtu": "8950",
		"pod_tcp_segmentation_offload": "on", "pod_generic_receive_offload": "off"}
	if !maps.Equal(fp, want) {
		t.Errorf("got %v, want %v", fp, want)
	}
	fp = map[string]string{}
	parseInterfaceFacts("dev eth0\nmtu 1500\nroute default via 10.0.1.1 dev eth0\n", "pod", fp)
	if _, ok := fp["pod_route_mtu"]; ok || fp["pod_mtu"] != "1500" {
		t.Errorf("a route without an MTU of its own: %v", fp)
	}
}
