package kube

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cnibench/cnibench/internal/lab"
)

// NodeFamilies lists the IP families of a node's InternalIP addresses, in the node's order:
// a dual-stack node's primary family comes first.
func NodeFamilies(n corev1.Node) []string {
	var out []string
	for _, ip := range internalIPs(n) {
		if f := FamilyOf(ip); f != "" && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// internalIPs are a node's InternalIP addresses, in the node's order.
func internalIPs(n corev1.Node) []string {
	var out []string
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			out = append(out, a.Address)
		}
	}
	return out
}

// FamilyOf is an address's family, lab.IPv4 or lab.IPv6; "" for no address (a name).
func FamilyOf(addr string) string {
	ip, err := netip.ParseAddr(addr)
	switch {
	case err != nil:
		return ""
	case ip.Is4() || ip.Is4In6():
		return lab.IPv4
	}
	return lab.IPv6
}

// CheckFamily fails with one error saying what the cluster has when a placed node has no
// InternalIP of family: a single-stack cluster's nodes carry one family, a dual-stack
// cluster's both. "" (the cluster's primary family) always passes.
func (c *Client) CheckFamily(ctx context.Context, family string, p Placement) error {
	if family == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	for _, name := range p.all() {
		n, err := c.CS.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("family %s: read node %s: %w", family, name, err)
		}
		if fams := NodeFamilies(*n); !slices.Contains(fams, family) {
			return fmt.Errorf("family %s: node %s has InternalIPs of %s only (%s): the cluster is not %s or dual-stack",
				family, name, strings.Join(fams, " and "), strings.Join(internalIPs(*n), ", "), family)
		}
	}
	return nil
}

// Family is the IP family of the fixture's traffic: its spec's, else that of its first pod's
// primary address.
func (f *Fixture) Family() string {
	if f.Spec.Family != "" {
		return f.Spec.Family
	}
	for _, pods := range f.Pods {
		for _, p := range pods {
			if fam := FamilyOf(p.Status.PodIP); fam != "" {
				return fam
			}
		}
	}
	return ""
}
