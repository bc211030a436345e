package cluster

import (
	"fmt"
	"net"
	"strings"

	"github.com/cnibench/cnibench/internal/lab"
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
	// Family is the cluster's IP family (lab.ClusterFamilies); "" is IPv4.
	Family string
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

// Secondary is the block of the secondary network a cluster with Multus offers (macvlan over
// the underlay): inside the cluster's /16, so that nothing of it is the host's.
func (p Plan) Secondary() *net.IPNet {
	return &net.IPNet{IP: net.IPv4(10, p.octet(), 64, 0).To4(), Mask: net.CIDRMask(18, 32)}
}

// SecondaryCIDR is node i's (1-based) share of Secondary, whose addresses its pods'
// secondary interfaces take.
func (p Plan) SecondaryCIDR(i int) *net.IPNet {
	return &net.IPNet{IP: net.IPv4(10, p.octet(), byte(64+i), 0).To4(), Mask: net.CIDRMask(24, 32)}
}

// PodGateway is the first address of node i's pod subnet, held by the node's pod bridge.
func (p Plan) PodGateway(i int) net.IP {
	return net.IPv4(10, p.octet(), byte(128+i), 1).To4()
}

// v6 is an address of the IPv6 plan, which mirrors the IPv4 one inside a unique local /48
// whose third group spells the IPv4 block's second octet (10.200.0.0/16: fdcb:0:200::/48), so
// the two read alike. The underlay keeps its IPv4 addresses in every family: the root
// namespace reaches the API server over IPv4 alone, and its end of the root veth has IPv6
// disabled.
func (p Plan) v6(group3 int, rest string) net.IP {
	return net.ParseIP(fmt.Sprintf("fdcb:0:%d:%x::%s", p.octet(), group3, rest))
}

func v6Net(ip net.IP, ones int) *net.IPNet { return &net.IPNet{IP: ip, Mask: net.CIDRMask(ones, 128)} }

// Block6 is the cluster's whole IPv6 range; the root namespace gets an unreachable route for it.
func (p Plan) Block6() *net.IPNet { return v6Net(p.v6(0, ""), 48) }

// ControlPlaneIP6 is the control plane's IPv6 underlay address.
func (p Plan) ControlPlaneIP6() net.IP { return p.v6(0, "1") }

// NodeIP6 is node i's IPv6 underlay address.
func (p Plan) NodeIP6(i int) net.IP { return p.v6(0, fmt.Sprint(10+i)) }

// ServiceCIDR6 is the IPv6 ClusterIP range.
func (p Plan) ServiceCIDR6() *net.IPNet { return v6Net(p.v6(0x10, ""), 112) }

// KubernetesServiceIP6 is the IPv6 range's first address, the kubernetes Service's on an
// IPv6-only cluster.
func (p Plan) KubernetesServiceIP6() net.IP { return p.v6(0x10, "1") }

// DNSServiceIP6 is kube-dns's IPv6 ClusterIP.
func (p Plan) DNSServiceIP6() net.IP { return p.v6(0x10, "a") }

// ClusterCIDR6 covers every node's IPv6 pod subnet.
func (p Plan) ClusterCIDR6() *net.IPNet { return v6Net(p.v6(0x100, ""), 56) }

// PodCIDR6 is node i's IPv6 pod subnet, a /64 as the controller-manager would allocate it.
func (p Plan) PodCIDR6(i int) *net.IPNet { return v6Net(p.v6(0x100+i, ""), 64) }

// PodGateway6 is the first address of PodCIDR6(i), held by the node's pod bridge.
func (p Plan) PodGateway6(i int) net.IP { return p.v6(0x100+i, "1") }

// HasIPv4 reports whether the cluster has IPv4 nodes, pods and Services.
func (p Plan) HasIPv4() bool { return p.Family != lab.IPv6 }

// HasIPv6 reports whether the cluster has IPv6 nodes, pods and Services.
func (p Plan) HasIPv6() bool { return p.Family == lab.IPv6 || p.Family == lab.DualStack }

// families returns the IPv4 and IPv6 values the cluster's family has, primary first: both for
// dual-stack, where IPv4 is primary.
func families[T any](p Plan, v4, v6 T) []T {
	var out []T
	if p.HasIPv4() {
		out = append(out, v4)
	}
	if p.HasIPv6() {
		out = append(out, v6)
	}
	return out
}

// strs formats a families list as the API's lists take it.
func strs[T fmt.Stringer](list []T) []string {
	s := make([]string, len(list))
	for i, v := range list {
		s[i] = v.String()
	}
	return s
}

// joined formats a families list as Kubernetes' flags take it: comma-separated.
func joined[T fmt.Stringer](list []T) string { return strings.Join(strs(list), ",") }

// ServiceCIDRs are the cluster's ClusterIP ranges, primary first.
func (p Plan) ServiceCIDRs() []*net.IPNet { return families(p, p.ServiceCIDR(), p.ServiceCIDR6()) }

// ClusterCIDRs are the cluster's pod ranges, primary first.
func (p Plan) ClusterCIDRs() []*net.IPNet { return families(p, p.ClusterCIDR(), p.ClusterCIDR6()) }

// NodeIPs are node i's Kubernetes addresses, primary first.
func (p Plan) NodeIPs(i int) []net.IP { return families(p, p.NodeIP(i), p.NodeIP6(i)) }

// PodCIDRs are node i's pod subnets, primary first.
func (p Plan) PodCIDRs(i int) []*net.IPNet { return families(p, p.PodCIDR(i), p.PodCIDR6(i)) }

// DNSServiceIPs are kube-dns's ClusterIPs, primary first.
func (p Plan) DNSServiceIPs() []net.IP { return families(p, p.DNSServiceIP(), p.DNSServiceIP6()) }

// ListenAll is the address a control-plane daemon binds to take connections of every family
// the cluster has: "::" takes IPv4 as well.
func (p Plan) ListenAll() string {
	if p.HasIPv6() {
		return "::"
	}
	return "0.0.0.0"
}

// APIServerIP is the address the API server advertises, of the primary family: the kubernetes
// Service's endpoint must be of its ClusterIP's family.
func (p Plan) APIServerIP() net.IP { return families(p, p.ControlPlaneIP(), p.ControlPlaneIP6())[0] }

// overlaps reports whether two networks share any address.
func overlaps(a, b *net.IPNet) bool {
	return a.Contains(b.IP) || b.Contains(a.IP)
}

// pickIndex returns the lowest index whose block is neither used by another cluster nor
// overlapping a route the host already has.
func pickIndex(used map[int]bool, hostRoutes []*net.IPNet, family string) (int, error) {
	for i := 0; i < maxClusters; i++ {
		if used[i] {
			continue
		}
		if clashes(Plan{Index: i, Family: family}, hostRoutes) == nil {
			return i, nil
		}
	}
	return 0, fmt.Errorf("no free address block: all of 10.%d.0.0/16-10.%d.0.0/16 are used by clusters or collide with host routes",
		firstBlockOctet, firstBlockOctet+maxClusters-1)
}

// clashes returns the first host route other than a default one that overlaps the plan's
// IPv4 block, or its IPv6 block where the cluster has IPv6 (a host route into unique local
// space, a VPN's say, leaves IPv4 clusters alone); nil when none does.
func clashes(p Plan, hostRoutes []*net.IPNet) *net.IPNet {
	for _, r := range hostRoutes {
		if !isDefault(r) && (overlaps(p.Block(), r) || p.HasIPv6() && overlaps(p.Block6(), r)) {
			return r
		}
	}
	return nil
}

func isDefault(n *net.IPNet) bool {
	ones, _ := n.Mask.Size()
	return ones == 0
}
