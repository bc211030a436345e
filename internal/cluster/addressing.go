package cluster

import (
	"fmt"
	"net"
)

// Address plan: each cluster owns one /16 inside 10.0.0.0/8, chosen from a fixed window so that
// a route collision check against the host is cheap and clusters never overlap each other.
const (
	firstBlockOctet = 200
	maxClusters     = 55 // 10.200.0.0/16 .. 10.254.0.0/16
)

// Plan is the address plan of one cluster, derived from its index alone so that delete can
// recompute it from the state file.
type Plan struct {
	Index int
}

func (p Plan) octet() byte { return byte(firstBlockOctet + p.Index) }

// Block is the cluster's whole range; the root namespace gets an unreachable route for it.
func (p Plan) Block() *net.IPNet {
	return &net.IPNet{IP: net.IPv4(10, p.octet(), 0, 0).To4(), Mask: net.CIDRMask(16, 32)}
}

// Underlay is the L2 segment joining the control plane, the nodes and the root veth.
func (p Plan) Underlay() *net.IPNet {
	return &net.IPNet{IP: net.IPv4(10, p.octet(), 0, 0).To4(), Mask: net.CIDRMask(24, 32)}
}

// ControlPlaneIP is where etcd's clients, the API server and the bridge gateway live.
func (p Plan) ControlPlaneIP() net.IP { return net.IPv4(10, p.octet(), 0, 1).To4() }

// HostIP is the root namespace's end of its veth, the only cluster address in the root namespace.
func (p Plan) HostIP() net.IP { return net.IPv4(10, p.octet(), 0, 254).To4() }

// NodeIP is node i's (1-based) underlay address.
func (p Plan) NodeIP(i int) net.IP { return net.IPv4(10, p.octet(), 0, byte(10+i)).To4() }

// ServiceCIDR is the ClusterIP range.
func (p Plan) ServiceCIDR() *net.IPNet {
	return &net.IPNet{IP: net.IPv4(10, p.octet(), 16, 0).To4(), Mask: net.CIDRMask(20, 32)}
}

// KubernetesServiceIP is the first service IP, taken by the default/kubernetes Service.
func (p Plan) KubernetesServiceIP() net.IP { return net.IPv4(10, p.octet(), 16, 1).To4() }

// DNSServiceIP is the ClusterIP of kube-dns.
func (p Plan) DNSServiceIP() net.IP { return net.IPv4(10, p.octet(), 16, 10).To4() }

// ClusterCIDR covers every node's pod subnet.
func (p Plan) ClusterCIDR() *net.IPNet {
	return &net.IPNet{IP: net.IPv4(10, p.octet(), 128, 0).To4(), Mask: net.CIDRMask(17, 32)}
}

// PodCIDR is node i's (1-based) pod subnet.
func (p Plan) PodCIDR(i int) *net.IPNet {
	return &net.IPNet{IP: net.IPv4(10, p.octet(), byte(128+i), 0).To4(), Mask: net.CIDRMask(24, 32)}
}

// PodGateway is the first address of node i's pod subnet, held by the node's pod bridge.
func (p Plan) PodGateway(i int) net.IP {
	return net.IPv4(10, p.octet(), byte(128+i), 1).To4()
}

// overlaps reports whether two networks share any address.
func overlaps(a, b *net.IPNet) bool {
	return a.Contains(b.IP) || b.Contains(a.IP)
}

// pickIndex returns the lowest index whose block is neither used by another cluster nor
// overlapping a route the host already has.
func pickIndex(used map[int]bool, hostRoutes []*net.IPNet) (int, error) {
	for i := 0; i < maxClusters; i++ {
		if used[i] {
			continue
		}
		block := Plan{Index: i}.Block()
		clash := false
		for _, r := range hostRoutes {
			if r.IP.To4() != nil && overlaps(block, r) && !isDefault(r) {
				clash = true
				break
			}
		}
		if !clash {
			return i, nil
		}
	}
	return 0, fmt.Errorf("no free address block: all of 10.%d.0.0/16-10.%d.0.0/16 are used by clusters or collide with host routes",
		firstBlockOctet, firstBlockOctet+maxClusters-1)
}

func isDefault(n *net.IPNet) bool {
	ones, _ := n.Mask.Size()
	return ones == 0
}
