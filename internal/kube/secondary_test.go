package kube

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// multusStatus is a network-status annotation as Multus v4 writes it: the cluster network's
// interface, then the attachment's.
const multusStatus = `[{"name":"cnb-flannel-node2","interface":"eth0","ips":["10.200.130.7"],"mac":"aa:bb:cc:dd:ee:01","default":true,"dns":{}},
{"name":"default/cnb-secondary","interface":"net1","ips":["10.200.66.3"],"mac":"aa:bb:cc:dd:ee:02","dns":{}}]`

func TestSecondaryIPFromNetworkStatus(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{AnnotationNetworkStatus: multusStatus}}}
	f := &Fixture{Spec: FixtureSpec{Secondary: "default/cnb-secondary"}, Pods: map[string][]*corev1.Pod{RoleServerB: {pod}}}
	if got := f.SecondaryIP(RoleServerB, 0); got != "10.200.66.3" {
		t.Errorf("SecondaryIP = %q, want the attachment's 10.200.66.3", got)
	}
	if got := f.SecondaryInterface(RoleServerB, 0); got != "net1" {
		t.Errorf("SecondaryInterface = %q, want net1", got)
	}
	f.Spec.Family = "ipv6"
	if got := f.SecondaryIP(RoleServerB, 0); got != "" {
		t.Errorf("an IPv6 address of an IPv4 attachment: %q", got)
	}
	f.Spec.Family, f.Spec.Secondary = "", "default/other"
	if got := f.SecondaryIP(RoleServerB, 0); got != "" {
		t.Errorf("the address of a network the fixture did not ask for: %q", got)
	}
	if got := f.SecondaryIP(RoleClient, 0); got != "" {
		t.Errorf("a role without pods has %q", got)
	}
}

// TestPodsAskForTheSecondaryNetwork: every pod of the pod network names the attachment; the
// host-network pods, which have no interfaces of their own, do not.
func TestPodsAskForTheSecondaryNetwork(t *testing.T) {
	s := FixtureSpec{Namespace: "ns", Image: "img", Secondary: "default/cnb-secondary", Servers: [][]Server{{{Name: "iperf3", Argv: []string{"iperf3", "-s"}, Port: 5201}}}}
	for _, role := range []string{RoleClient, RoleServerA, RoleServerB, RoleHostClient, RoleHostServer} {
		got, want := s.pod(role, 0).Annotations[AnnotationNetworks], "default/cnb-secondary"
		if role == RoleHostClient || role == RoleHostServer {
			want = ""
		}
		if got != want {
			t.Errorf("%s asks for %q, want %q", role, got, want)
		}
	}
	s.Secondary = ""
	if _, ok := s.pod(RoleClient, 0).Annotations[AnnotationNetworks]; ok {
		t.Error("a pod asks for a network the spec has none of")
	}
}
