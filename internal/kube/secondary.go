package kube

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// The annotations of the Kubernetes network plumbing working group's multi-network
// specification, which Multus implements: a pod asks for networks with the first, and Multus
// writes what each of its interfaces got in the second.
const (
	AnnotationNetworks      = "k8s.v1.cni.cncf.io/networks"
	AnnotationNetworkStatus = "k8s.v1.cni.cncf.io/network-status"
)

// NetworkStatus is one interface of a pod as its network-status annotation records it.
type NetworkStatus struct {
	// Name is the network's, namespace/name for an attachment.
	Name      string   `json:"name"`
	Interface string   `json:"interface"`
	IPs       []string `json:"ips"`
	Default   bool     `json:"default"`
}

// NetworkStatuses reads a pod's network-status annotation; nil when it has none or it cannot
// be read.
func NetworkStatuses(p *corev1.Pod) []NetworkStatus {
	var out []NetworkStatus
	if err := json.Unmarshal([]byte(p.Annotations[AnnotationNetworkStatus]), &out); err != nil {
		return nil
	}
	return out
}

// attachSecondary asks for the spec's secondary network on a pod of the pod network.
func (s FixtureSpec) attachSecondary(p *corev1.Pod) {
	if s.Secondary == "" || p.Spec.HostNetwork {
		return
	}
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[AnnotationNetworks] = s.Secondary
}

// SecondaryIP is the address of pair's pod of a role on the fixture's secondary network, in
// the fixture's family (its first address when the fixture names none); "" when it has none.
func (f *Fixture) SecondaryIP(role string, pair int) string {
	p := f.Pod(role, pair)
	if p == nil {
		return ""
	}
	for _, st := range NetworkStatuses(p) {
		if st.Default || st.Name != f.Spec.Secondary {
			continue
		}
		for _, ip := range st.IPs {
			if f.Spec.Family == "" || FamilyOf(ip) == f.Spec.Family {
				return ip
			}
		}
	}
	return ""
}

// SecondaryInterface is the name of the interface of pair's pod of a role on the fixture's
// secondary network ("net1" under Multus); "" when it has none.
func (f *Fixture) SecondaryInterface(role string, pair int) string {
	p := f.Pod(role, pair)
	if p == nil {
		return ""
	}
	for _, st := range NetworkStatuses(p) {
		if !st.Default && st.Name == f.Spec.Secondary {
			return st.Interface
		}
	}
	return ""
}

// CheckSecondary checks that every pod of the fixture on the pod network got an address of
// its own on the secondary network: an IPAM that hands out addresses per node (host-local
// with one range on every node) gives pods of two nodes the same one, and a client would then
// reach itself. It returns pair 0's interfaces and addresses, "client net1 10.1.2.3, ...", for
// the fingerprint.
func (f *Fixture) CheckSecondary() (string, error) {
	holder := map[string]string{} // address: pod
	var first []string
	for _, role := range f.Spec.Roles {
		for pair, p := range f.Pods[role] {
			if p == nil || p.Spec.HostNetwork {
				continue
			}
			ip := f.SecondaryIP(role, pair)
			if ip == "" {
				family := ""
				if f.Spec.Family != "" {
					family = " in " + f.Spec.Family
				}
				return "", fmt.Errorf("pod %s got no address%s on network %s (its network-status: %s): its IPAM gave it none",
					p.Name, family, f.Spec.Secondary, cmp.Or(p.Annotations[AnnotationNetworkStatus], "none"))
			}
			if other, ok := holder[ip]; ok {
				return "", fmt.Errorf("pods %s and %s both got %s on network %s: its IPAM hands out addresses per node, not across the cluster "+
					"(host-local with one range on every node): expected cluster-wide IPAM such as whereabouts", other, p.Name, ip, f.Spec.Secondary)
			}
			holder[ip] = p.Name
			if pair == 0 {
				first = append(first, role+" "+f.SecondaryInterface(role, pair)+" "+ip)
			}
		}
	}
	return strings.Join(first, ", "), nil
}
