// Package datapath holds the pod network implementations of the local cluster, one file per
// datapath. A datapath writes each node's CNI configuration and installs whatever forwarding
// it needs between nodes, inside the cluster's namespaces only.
package datapath

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"sort"
	"strings"

	"github.com/cnibench/cnibench/internal/lab"
)

// Node is what a datapath needs to know of one node.
type Node struct {
	Name    string     // Kubernetes node name
	Netns   string     // network namespace under /run/netns
	Uplink  string     // the node's underlay interface inside its namespace
	IP      net.IP     // underlay address
	PodCIDR *net.IPNet // the node's pod subnet
	Gateway net.IP     // first address of PodCIDR, the pods' default gateway
	// IP6, PodCIDR6 and Gateway6 are the IPv6 counterparts of IP, PodCIDR and Gateway; nil on
	// an IPv4-only cluster.
	IP6      net.IP
	PodCIDR6 *net.IPNet
	Gateway6 net.IP
	// Secondary is the node's share of the cluster's secondary block (Cluster.Secondary): the
	// addresses its pods' secondary interfaces take under Multus.
	Secondary  *net.IPNet
	CNIConfDir string // where the node's container runtime reads CNI configuration
	DataDir    string // node-private state (e.g. host-local IPAM allocations)
}

// Cluster is what a datapath needs to know of the cluster.
type Cluster struct {
	Name        string
	ClusterCIDR *net.IPNet
	ServiceCIDR *net.IPNet
	Nodes       []Node
	// Kubeconfig is an admin kubeconfig usable from every node namespace.
	Kubeconfig string
	// APIServer is the API server's URL as nodes reach it.
	APIServer string
	// Bin returns the path of a cached binary (cnibench setup builds them).
	Bin func(name string) string
	// StateDir is the cluster's state directory; a datapath keeps its files below it.
	StateDir string
	// MTU is the underlay's: every node's uplink has it, and a datapath sizes its pods'
	// interfaces from it, less its encapsulation's overhead.
	MTU int
	// Family is the cluster's IP family: lab.IPv4, lab.IPv6 (pods get IPv6 addresses only) or
	// lab.DualStack (both, IPv4 first). The underlay carries IPv4 in every family.
	Family string
	// ClusterCIDR6 covers the nodes' IPv6 pod subnets; nil on an IPv4-only cluster.
	ClusterCIDR6 *net.IPNet
	// Secondary is the block of the secondary network a cluster with Multus offers, one
	// L2 segment over the underlay: every node's Secondary is in it.
	Secondary *net.IPNet
}

// podRanges are node n's pod subnets with their gateways, in the cluster's family order: the
// shape host-local IPAM's ranges take.
func (c Cluster) podRanges(n Node) [][]map[string]string {
	var out [][]map[string]string
	if c.Family != lab.IPv6 {
		out = append(out, []map[string]string{{"subnet": n.PodCIDR.String(), "gateway": n.Gateway.String()}})
	}
	if n.PodCIDR6 != nil {
		out = append(out, []map[string]string{{"subnet": n.PodCIDR6.String(), "gateway": n.Gateway6.String()}})
	}
	return out
}

// podCIDRs are node n's pod subnets in the cluster's family order, as a Node's podCIDRs
// list them.
func (c Cluster) podCIDRs(n Node) []string {
	var out []string
	for _, r := range c.podRanges(n) {
		out = append(out, r[0]["subnet"])
	}
	return out
}

// defaultRoutes are the pods' default routes, one per family they have.
func (c Cluster) defaultRoutes() []map[string]string {
	var out []map[string]string
	if c.Family != lab.IPv6 {
		out = append(out, map[string]string{"dst": "0.0.0.0/0"})
	}
	if c.ClusterCIDR6 != nil {
		out = append(out, map[string]string{"dst": "::/0"})
	}
	return out
}

// vxlanOverhead is what VXLAN over IPv4 adds to a packet: outer IPv4, UDP, VXLAN and inner
// Ethernet headers.
const vxlanOverhead = 50

// Daemon is a long-running process of a datapath (flanneld, cilium-agent, ...). The cluster
// starts it in the node's network namespace and cgroup, logs it, and stops it on delete.
type Daemon struct {
	Name string   // unique within the cluster, e.g. "node1-flanneld"
	Node int      // node index from 1; 0 runs it in the control-plane namespace
	Argv []string // command; wrap it (e.g. in unshare) when it needs a private mount namespace
	Env  []string // extra environment
	// Ready reports whether the daemon has finished its start (e.g. a subnet file exists); nil
	// means started is ready.
	Ready func() bool
}

// WithDaemons is implemented by datapaths that run daemons: Daemons is called after the
// kubelets and kube-proxies have started (Node objects exist), and the cluster waits for
// every daemon's Ready before waiting for the nodes.
type WithDaemons interface {
	Daemons(c Cluster) ([]Daemon, error)
}

// WithBinaries is implemented by datapaths that need cached binaries beyond the CNI
// plugins; create checks them first and says how to build what is missing.
type WithBinaries interface {
	Binaries() []string
}

// WithEgressGateway is implemented by datapaths with an egress gateway of their own. The
// cluster then applies the manifest EgressGatewayPolicy returns instead of routing the external
// host's gateway address to the gateway node and SNATing it there with nftables.
type WithEgressGateway interface {
	// EgressGatewayPolicy is the policy that sends pods' traffic to g's destinations out
	// through the nodes labelled g.Label=true, SNATed to the gateway's address; "" when this
	// deployment of the datapath has no egress gateway.
	EgressGatewayPolicy(g EgressGateway) string
}

// EgressGateway is what an egress gateway policy routes, and where to.
type EgressGateway struct {
	// Destinations are the CIDRs the policy covers: one per family the cluster has.
	Destinations []string
	// Label is the label (set to "true") of the gateway node.
	Label string
	// EgressIP is the gateway's IPv4 address, the source its traffic leaves with.
	EgressIP string
	// Interface is the gateway's interface holding EgressIP and, on a cluster with IPv6, the
	// IPv6 address the traffic of that family leaves with.
	Interface string
}

// WithFingerprint is implemented by datapaths that can describe themselves for a benchmark
// result's environment fingerprint, with keys such as "cni", "cni_version" and "cni_mode".
type WithFingerprint interface {
	Fingerprint() map[string]string
}

// WithoutKubeProxy is implemented by datapaths that can serve Services themselves; when
// ReplacesKubeProxy is true the cluster runs no kube-proxy and its proxy mode is "none".
type WithoutKubeProxy interface {
	ReplacesKubeProxy() bool
}

func replacesKubeProxy(dp Datapath) bool {
	w, ok := dp.(WithoutKubeProxy)
	return ok && w.ReplacesKubeProxy()
}

// Datapath sets up pod networking for a cluster whose nodes' namespaces and underlay exist.
type Datapath interface {
	// Name is the --datapath value.
	Name() string
	// AllocateNodeCIDRs says whether the controller-manager assigns node pod CIDRs; when false,
	// the provider writes each Node's spec.podCIDR from its own plan.
	AllocateNodeCIDRs() bool
	// Setup runs before the nodes' kubelets start.
	Setup(ctx context.Context, c Cluster) error
}

// registry maps --datapath values to implementations; a function, not a variable, so that
// there is no package-level mutable state.
func registry() map[string]Datapath {
	return map[string]Datapath{
		"bridge":        Bridge{},
		"calico-vxlan":  Calico{},
		"calico-ebpf":   Calico{EBPF: true},
		"canal":         Calico{Canal: true},
		"cilium-vxlan":  Cilium{},
		"cilium-native": Cilium{Native: true},
		"cilium-kpr":    Cilium{KPR: true},
		"flannel-vxlan": Flannel{Backend: FlannelVXLAN}, "flannel-host-gw": Flannel{Backend: FlannelHostGW},
	}
}

// Names lists the known datapaths, sorted.
func Names() []string {
	var names []string
	for n := range registry() {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Lookup returns the datapath called name.
func Lookup(name string) (Datapath, error) {
	d, ok := registry()[name]
	if !ok {
		return nil, fmt.Errorf("datapath %q: expected one of %s", name, strings.Join(Names(), ", "))
	}
	return d, nil
}

// ipIn runs an iproute2 command inside a network namespace.
func ipIn(ctx context.Context, netns string, args ...string) error {
	full := append([]string{"-n", netns}, args...)
	out, err := exec.CommandContext(ctx, "ip", full...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(full, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
