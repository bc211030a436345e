package suite

import "slices"

// Paths a sample can take between client and server.
const (
	SameNode     = "same-node"      // pod to pod on one node
	CrossNode    = "cross-node"     // pod to pod across nodes
	HostNetwork  = "host-network"   // node to node, both ends in the host network: the cluster's baseline
	PodToService = "pod-to-service" // pod to a ClusterIP Service whose endpoint is on the other node
	Localhost    = "localhost"      // two containers of one pod over loopback: the host's ceiling
	// Egress is a pod to a server outside the cluster, SNATed by the pod's own node.
	Egress = "egress"
	// EgressGateway is a pod to a server outside the cluster through the egress gateway node,
	// which SNATs it.
	EgressGateway = "egress-gateway"
	// Gateway is a pod to a Gateway API gateway whose HTTPRoute splits requests by weight
	// between two backends on the other node: the path of the gateway-split workload.
	Gateway = "gateway"
	// Secondary is pod to pod across nodes over the pods' second interface, a network
	// attachment (a local cluster with Multus: macvlan over the nodes' underlay) instead of the
	// cluster network.
	Secondary = "secondary"
	// SecondarySameNode is pod to pod on one node over the same network attachment as
	// Secondary (under macvlan's bridge mode, switched inside the node's uplink device).
	SecondarySameNode = "secondary-same-node"
	// InPod is the path of the workloads that run inside one pod (cpu, memory): not a path a
	// suite lists, but the one their samples carry.
	InPod = "in-pod"
)

// The pods of a run's fixture, by role, that a path's ends run in: the names kube gives its
// roles (kube.RoleClient...; the runner's tests hold them equal), spelled here so that the
// suite and the renderers need not compile the Kubernetes client.
const (
	PodClient     = "client"      // pod network, the first node
	PodServerA    = "server-a"    // pod network, the first node
	PodServerB    = "server-b"    // pod network, the second node; also behind the Service
	PodHostClient = "host-client" // host network, the first node
	PodHostServer = "host-server" // host network, the second node
	PodLocal      = "local"       // client and servers in one pod, the first node
)

// Address is what a path's client connects to.
type Address int

// The addresses a client connects to.
const (
	AddrNone     Address = iota // nothing: the workload runs in the client's container alone
	AddrPod                     // the server pod's IP (a host-network pod's is its node's)
	AddrService                 // the ClusterIP of the Service in front of the server pod
	AddrLoopback                // loopback: the server is a container of the client's pod
	AddrExternal                // the external host, straight from the client's node
	// AddrExternalViaGateway is the external host's address routed through the egress gateway
	// node.
	AddrExternalViaGateway
	AddrGateway // the Gateway API gateway, whose route splits requests between two backends
	// AddrSecondary is the server pod's address on its secondary network attachment.
	AddrSecondary
)

// Node says where a path's server runs, seen from its client, which runs on the first node.
type Node int

// Where a server runs.
const (
	NodeOutside Node = iota // outside the cluster's nodes: the external host
	NodeSame                // the client's node
	NodeOther               // another node of the cluster
)

// Feature is what a path needs of its target beyond the run's pods: what the target's provider
// offers (runner.Provided).
type Feature string

// The features a path may need.
const (
	NeedsExternal      Feature = "an external host"
	NeedsEgressGateway Feature = "an egress gateway node"
	NeedsGatewayAPI    Feature = "the Gateway API"
	// NeedsSecondary is a secondary network the pods can attach to (a
	// NetworkAttachmentDefinition and Multus).
	NeedsSecondary Feature = "a secondary network"
)

// Path is what the code knows of one path: where its ends run, what it needs of a target and
// how reports show it. PathTable lists them all, one entry each.
type Path struct {
	Name string
	// Client is the fixture pod the client runs in; Server the pod of its server, "" for a
	// server outside the fixture (the external host, the gateway) or none.
	Client, Server string
	ServerNode     Node
	Address        Address
	// HostNetwork: both ends share their nodes' network namespaces, whose interfaces the
	// clients of several pairs on one node then share.
	HostNetwork bool
	Needs       []Feature
	// Colour is the path's fixed fill in every chart, a Tableau 10 hue; "" hands it one of the
	// report's extra colours.
	Colour string
	// Listed: a suite may name it (in-pod is only the path its workloads' samples carry).
	Listed bool
}

// OneNode reports whether a single node carries the path: its server is on the client's node.
func (p Path) OneNode() bool { return p.ServerNode == NodeSame }

// Pods lists the fixture pods the path needs, client first.
func (p Path) Pods() []string {
	if p.Server == "" || p.Server == p.Client {
		return []string{p.Client}
	}
	return []string{p.Client, p.Server}
}

// NeedsFeature reports whether the path needs a feature of its target.
func (p Path) NeedsFeature(f Feature) bool { return slices.Contains(p.Needs, f) }

// PathTable lists every path, in display order: the cluster's baseline first, the in-pod path
// last. Adding a path is adding its entry (and, for a new Address, its endpoints in the runner).
func PathTable() []Path {
	return []Path{
		{Name: HostNetwork, Client: PodHostClient, Server: PodHostServer, ServerNode: NodeOther, Address: AddrPod, HostNetwork: true,
			Colour: "#4e79a7", Listed: true}, // blue: the baseline
		{Name: SameNode, Client: PodClient, Server: PodServerA, ServerNode: NodeSame, Address: AddrPod,
			Colour: "#f28e2b", Listed: true}, // orange
		{Name: CrossNode, Client: PodClient, Server: PodServerB, ServerNode: NodeOther, Address: AddrPod,
			Colour: "#59a14f", Listed: true}, // green
		{Name: PodToService, Client: PodClient, Server: PodServerB, ServerNode: NodeOther, Address: AddrService,
			Colour: "#e15759", Listed: true}, // red
		{Name: Localhost, Client: PodLocal, Server: PodLocal, ServerNode: NodeSame, Address: AddrLoopback,
			Colour: "#b07aa1", Listed: true}, // purple
		{Name: Egress, Client: PodClient, ServerNode: NodeOutside, Address: AddrExternal,
			Needs: []Feature{NeedsExternal}, Listed: true},
		{Name: EgressGateway, Client: PodClient, ServerNode: NodeOutside, Address: AddrExternalViaGateway,
			Needs: []Feature{NeedsExternal, NeedsEgressGateway}, Listed: true},
		{Name: Gateway, Client: PodClient, ServerNode: NodeOther, Address: AddrGateway,
			Needs: []Feature{NeedsGatewayAPI}, Listed: true},
		{Name: Secondary, Client: PodClient, Server: PodServerB, ServerNode: NodeOther, Address: AddrSecondary,
			Needs: []Feature{NeedsSecondary}, Listed: true},
		{Name: SecondarySameNode, Client: PodClient, Server: PodServerA, ServerNode: NodeSame, Address: AddrSecondary,
			Needs: []Feature{NeedsSecondary}, Listed: true},
		{Name: InPod, Client: PodClient, ServerNode: NodeSame, Address: AddrNone},
	}
}

// PathOf returns the entry of a path, and false for a name that is no path.
func PathOf(name string) (Path, bool) {
	i := slices.IndexFunc(PathTable(), func(p Path) bool { return p.Name == name })
	if i < 0 {
		return Path{}, false
	}
	return PathTable()[i], true
}

// AllPaths lists every path a suite may name, in display order.
func AllPaths() []string {
	var out []string
	for _, p := range PathTable() {
		if p.Listed {
			out = append(out, p.Name)
		}
	}
	return out
}

// OneNodePaths lists the paths a single node can carry: both ends on one node.
func OneNodePaths() []string {
	var out []string
	for _, p := range PathTable() {
		if p.Listed && p.OneNode() {
			out = append(out, p.Name)
		}
	}
	return out
}

// TwoNodePaths lists the suite's paths that need two nodes: every path but OneNodePaths.
func (s Suite) TwoNodePaths() []string {
	var out []string
	for _, p := range s.Paths {
		if !slices.Contains(OneNodePaths(), p) {
			out = append(out, p)
		}
	}
	return out
}

// PathsNeed reports whether one of the paths needs a feature of its target.
func PathsNeed(paths []string, f Feature) bool {
	return slices.ContainsFunc(paths, func(name string) bool {
		p, _ := PathOf(name)
		return p.NeedsFeature(f)
	})
}

// IsEgress reports whether a path leaves the cluster: its server is the external host's.
func IsEgress(path string) bool {
	p, _ := PathOf(path)
	return p.NeedsFeature(NeedsExternal)
}
