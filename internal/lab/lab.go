// Package lab is the vocabulary of cnibench's local clusters: the container runtime
// interfaces, runtime handlers, kube-proxy modes, Kubernetes releases and datapaths a local
// cluster can have, with the facts about each that a suite, the command line and the cluster
// builder share. It depends on nothing else in cnibench but internal/setting, so the suite schema (and through it
// the reports) names what a local cluster is without compiling how one is built
// (internal/cluster).
package lab

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/internal/setting"
)

// Container runtime interfaces (CRIs) a local cluster can run on its nodes.
const (
	CRIContainerd = "containerd"
	CRICrio       = "crio"
)

// CRIs lists the container runtime interfaces a local cluster can run.
func CRIs() []string { return []string{CRIContainerd, CRICrio} }

// OCI runtime handlers a local cluster can offer, each with a RuntimeClass of its name.
const (
	RuntimeRunc  = "runc"  // Debian's runc, containerd's default handler
	RuntimeCrun  = "crun"  // Debian's crun, through the cluster's wrapper
	RuntimeRunsc = "runsc" // gVisor, built from the module proxy on first use
	RuntimeYouki = "youki" // youki (Rust), built from crates.io on first use
)

// RuntimeHandlers lists every handler a local cluster can offer.
func RuntimeHandlers() []string {
	return []string{RuntimeRunc, RuntimeCrun, RuntimeRunsc, RuntimeYouki}
}

// DefaultRuntimes are the handlers a cluster offers unless told otherwise: the ones that need
// no build.
func DefaultRuntimes() []string { return []string{RuntimeRunc, RuntimeCrun} }

// HandlersFor lists the runtime handlers a CRI offers here. CRI-O offers runc only: Debian's
// crun 1.8 is too old for CRI-O 1.34, and runsc did not start under it.
func HandlersFor(cri string) []string {
	if cri == CRICrio {
		return []string{RuntimeRunc}
	}
	return RuntimeHandlers()
}

// kube-proxy modes. ProxyNone is the mode of a cluster whose datapath replaces kube-proxy.
const (
	ProxyNftables = "nftables"
	ProxyIptables = "iptables"
	ProxyNone     = "none"
)

// ProxyModes lists the kube-proxy modes a cluster whose datapath keeps kube-proxy can run
// (IPVS is not in this kind of kernel).
func ProxyModes() []string { return []string{ProxyNftables, ProxyIptables} }

// DefaultKubernetesVersion is the Kubernetes release a local cluster runs unless told
// otherwise. kubelet 1.35+ refuses cgroup v1 unless its config sets failCgroupV1: false.
const DefaultKubernetesVersion = "v1.37.2"

// KubernetesVersions lists the Kubernetes releases a local cluster can run, newest (the
// default) first: each verified to build from the module proxy (with every staging module
// published) and to run here. The others stay selectable for comparisons with what a user's
// clusters run.
func KubernetesVersions() []string {
	return []string{DefaultKubernetesVersion, "v1.34.2"}
}

// CheckKubernetesVersion refuses a release that is not selectable, as a *setting.Error.
func CheckKubernetesVersion(version string) error {
	if slices.Contains(KubernetesVersions(), version) {
		return nil
	}
	return &setting.Error{Name: "kubernetes", Value: strconv.Quote(version), Want: "expected one of " + strings.Join(KubernetesVersions(), ", ")}
}

// MaxNodes bounds a local cluster's nodes: in the cluster's address plan node i has the
// underlay address 10.B.0.(10+i) and the pod subnet 10.B.(128+i).0/24.
const MaxNodes = 50

// Datapath is what the rest of cnibench knows about a datapath without building one; its
// implementation is internal/cluster/datapath, whose tests hold it to these facts.
type Datapath struct {
	// Name is the --datapath value.
	Name string
	// ReplacesKubeProxy: the cluster runs no kube-proxy (proxy mode ProxyNone).
	ReplacesKubeProxy bool
	// EnforcesNetworkPolicy: NetworkPolicy objects take effect.
	EnforcesNetworkPolicy bool
	// NeedsIPv4 says why the datapath's local clusters cannot be IPv6-only (every datapath
	// builds dual-stack); "" when they can.
	NeedsIPv4 string
	// UnderMultus: a cluster with Multus (LocalConfig.Multus) can delegate its pods to it.
	UnderMultus bool
	// IPv4Only says why the datapath's local clusters carry IPv4 alone; "" when they can
	// carry IPv6 too.
	IPv4Only string
}

// Datapaths lists the datapaths a local cluster can have, sorted by name.
func Datapaths() []Datapath {
	return []Datapath{
		{Name: "bridge"},
		{Name: "calico-ebpf", ReplacesKubeProxy: true, EnforcesNetworkPolicy: true,
			IPv4Only: "this kernel's verifier rejects Calico's IPv6 BPF programs (R4 min value is negative)"},
		{Name: "calico-vxlan", EnforcesNetworkPolicy: true},
		{Name: "canal", EnforcesNetworkPolicy: true},
		{Name: "cilium-kpr", ReplacesKubeProxy: true, EnforcesNetworkPolicy: true,
			NeedsIPv4: "its egress gateway, on with kube-proxy replacement here, requires IPv4 masquerading"},
		{Name: "cilium-native", EnforcesNetworkPolicy: true},
		{Name: "cilium-vxlan", EnforcesNetworkPolicy: true, UnderMultus: true},
		{Name: "flannel-host-gw", UnderMultus: true},
		{Name: "flannel-vxlan", UnderMultus: true},
	}
}

// SecondaryNetwork is the NetworkAttachmentDefinition a local cluster with Multus offers, as a
// pod's k8s.v1.cni.cncf.io/networks annotation names it (namespace/name): a macvlan interface
// in bridge mode over the node's uplink, addressed from a range of the cluster's own.
const SecondaryNetwork = "default/cnb-secondary"

// Gateway API implementations a local cluster's target may choose for the gateway path
// (a suite target's gateway): Traefik, which the run deploys, is the default; Envoy Gateway
// runs in clusters created with it.
const (
	GatewayTraefik = "traefik"
	GatewayEnvoy   = "envoy"
)

// EnvoyGatewayNamespace is where a local cluster runs Envoy Gateway's controller, and where
// the controller creates the Envoy proxies of every Gateway (its default: not the Gateway's
// namespace).
const EnvoyGatewayNamespace = "envoy-gateway-system"

// Gateways lists the Gateway API implementations of a local cluster.
func Gateways() []string { return []string{GatewayTraefik, GatewayEnvoy} }

// IP families of a local cluster (LocalConfig.IPFamily) and of a run's traffic (a suite's
// families).
const (
	IPv4      = "ipv4"
	IPv6      = "ipv6"
	DualStack = "dual"
)

// ClusterFamilies lists the IP families a local cluster can be built with.
func ClusterFamilies() []string { return []string{IPv4, IPv6, DualStack} }

// TrafficFamilies lists the IP families a run's traffic can take.
func TrafficFamilies() []string { return []string{IPv4, IPv6} }

// HasFamily reports whether a cluster of the given IP family ("" is IPv4) carries traffic of
// family f.
func HasFamily(cluster, f string) bool {
	switch cluster {
	case DualStack:
		return f == IPv4 || f == IPv6
	case "":
		return f == IPv4
	}
	return cluster == f
}

// DatapathNames lists the datapaths' names, sorted.
func DatapathNames() []string {
	var out []string
	for _, d := range Datapaths() {
		out = append(out, d.Name)
	}
	return out
}

// LookupDatapath returns the facts of the datapath called name.
func LookupDatapath(name string) (Datapath, error) {
	for _, d := range Datapaths() {
		if d.Name == name {
			return d, nil
		}
	}
	return Datapath{}, fmt.Errorf("%q: expected one of %s", name, strings.Join(DatapathNames(), ", "))
}

// DefaultProxyMode is the kube-proxy mode a cluster on the named datapath gets when none is
// asked for: none where the datapath replaces kube-proxy, nftables otherwise.
func DefaultProxyMode(datapath string) string {
	if d, err := LookupDatapath(datapath); err == nil && d.ReplacesKubeProxy {
		return ProxyNone
	}
	return ProxyNftables
}

// DatapathsWhere lists the names of the datapaths for which keep is true.
func DatapathsWhere(keep func(Datapath) bool) []string {
	var out []string
	for _, d := range Datapaths() {
		if keep(d) {
			out = append(out, d.Name)
		}
	}
	return out
}
