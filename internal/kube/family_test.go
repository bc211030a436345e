package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/cnibench/cnibench/internal/lab"
)

func dualPod() *corev1.Pod {
	return &corev1.Pod{Status: corev1.PodStatus{PodIP: "10.200.128.5",
		PodIPs: []corev1.PodIP{{IP: "10.200.128.5"}, {IP: "fdcb:0:200:100::5"}}}}
}

func TestPodIPOfFamily(t *testing.T) {
	f := &Fixture{Pods: map[string][]*corev1.Pod{RoleServerB: {dualPod()}}}
	for family, want := range map[string]string{"": "10.200.128.5", lab.IPv4: "10.200.128.5", lab.IPv6: "fdcb:0:200:100::5"} {
		f.Spec.Family = family
		if got := f.PodIP(RoleServerB, 0); got != want {
			t.Errorf("family %q: %s, want %s", family, got, want)
		}
	}
	v4only := &corev1.Pod{Status: corev1.PodStatus{PodIP: "10.0.0.1", PodIPs: []corev1.PodIP{{IP: "10.0.0.1"}}}}
	if got := podIPOf(v4only, lab.IPv6); got != "" {
		t.Errorf("an IPv4-only pod's IPv6 address: %q, want none", got)
	}
	if f.PodIP(RoleClient, 0) != "" {
		t.Error("a role without pods has an address")
	}
	f.Spec.Family = ""
	if got := f.Family(); got != lab.IPv4 {
		t.Errorf("Family() of a fixture without one = %q, want its pods' primary family", got)
	}
}

func TestServiceTakesTheFixturesFamily(t *testing.T) {
	s := FixtureSpec{Family: lab.IPv6, Servers: [][]Server{{{Name: "srv0-iperf3", Port: 20000}}}}
	svc := s.service(0)
	if svc.Spec.IPFamilyPolicy == nil || *svc.Spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack ||
		len(svc.Spec.IPFamilies) != 1 || svc.Spec.IPFamilies[0] != corev1.IPv6Protocol {
		t.Errorf("IPv6 fixture's Service: policy %v families %v", svc.Spec.IPFamilyPolicy, svc.Spec.IPFamilies)
	}
	s.Family = ""
	if svc := s.service(0); svc.Spec.IPFamilyPolicy != nil || svc.Spec.IPFamilies != nil {
		t.Errorf("a fixture without a family left the Service to the cluster's default: %+v", svc.Spec)
	}
}

// A server's data port (netperf's) is fronted like its own port, TCP and UDP.
func TestServiceOpensTheDataPort(t *testing.T) {
	s := FixtureSpec{Servers: [][]Server{{{Name: "srv0-iperf3", Port: 20000}, {Name: "srv1-netperf", Port: 20500, DataPort: 20501}}}}
	var got []string
	for _, p := range s.service(0).Spec.Ports {
		got = append(got, fmt.Sprintf("%s %d->%d/%s", p.Name, p.Port, p.TargetPort.IntVal, p.Protocol))
	}
	want := []string{"p20000-tcp 20000->20000/TCP", "p20000-udp 20000->20000/UDP", "p20500-tcp 20500->20500/TCP",
		"p20500-udp 20500->20500/UDP", "p20501-tcp 20501->20501/TCP", "p20501-udp 20501->20501/UDP"}
	if !slices.Equal(got, want) {
		t.Errorf("Service ports %v, want %v", got, want)
	}
}

func TestCheckFamilyNamesWhatTheNodesHave(t *testing.T) {
	node := func(name string, addrs ...string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		for _, a := range addrs {
			n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: a})
		}
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeHostName, Address: name})
		return n
	}
	c := &Client{CS: fake.NewClientset(node("a", "10.0.0.1", "fd00::1"), node("b", "10.0.0.2"))}
	ctx := context.Background()
	if err := c.CheckFamily(ctx, lab.IPv6, Placement{NodeA: "a", NodeB: "a"}); err != nil {
		t.Errorf("dual-stack node: %v", err)
	}
	err := c.CheckFamily(ctx, lab.IPv6, Placement{NodeA: "a", NodeB: "b"})
	if err == nil || !strings.Contains(err.Error(), "family ipv6: node b has InternalIPs of ipv4 only (10.0.0.2)") {
		t.Errorf("IPv4-only node: %v", err)
	}
	if err := c.CheckFamily(ctx, "", Placement{NodeA: "x", NodeB: "y"}); err != nil {
		t.Errorf("no family asked: %v", err)
	}
	if got := strings.Join(NodeFamilies(*node("c", "fd00::3", "10.0.0.3")), ","); got != "ipv6,ipv4" {
		t.Errorf("NodeFamilies of an IPv6-primary node = %s", got)
	}
}

func TestNetAdminForOffloads(t *testing.T) {
	s := FixtureSpec{NetAdmin: true, Servers: [][]Server{{{Name: "srv0-iperf3", Port: 20000}}}, RunID: "r"}
	for _, role := range []string{RoleClient, RoleServerB, RoleHostClient} {
		p := s.pod(role, 0)
		for _, c := range p.Spec.Containers {
			caps := c.SecurityContext
			has := caps != nil && caps.Capabilities != nil && len(caps.Capabilities.Add) == 1 && caps.Capabilities.Add[0] == "NET_ADMIN"
			if has == p.Spec.HostNetwork {
				t.Errorf("%s container %s: NET_ADMIN %v on the host network %v", role, c.Name, has, p.Spec.HostNetwork)
			}
		}
	}
	if s.namespaceLabels()[LabelPodSecurityEnforce] != PodSecurityPrivileged {
		t.Error("a namespace for pods with CAP_NET_ADMIN is not privileged")
	}
	if (FixtureSpec{}).pod(RoleClient, 0).Spec.Containers[0].SecurityContext != nil {
		t.Error("a fixture without offloads adds capabilities")
	}
}
