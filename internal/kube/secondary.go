package kube

import (
	"encoding/json"

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
			if f.Spec.Family == "" || familyOf(ip) == f.Spec.Family {
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
