package lab

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/internal/setting"
)

// Defaults of a local cluster's settings.
const (
	DefaultClusterName = "default"
	DefaultDatapath    = "bridge"
	DefaultNodes       = 2
	// DefaultMTU is the underlay's MTU: Ethernet's.
	DefaultMTU = 1500
	// MinMTU and MaxMTU bound the underlay's MTU: IPv6's minimum, and the jumbo frames of
	// common NICs.
	MinMTU, MaxMTU = 1280, 9000
)

// LocalConfig is what a local cluster is made of, in the one shape that a suite's `local:`
// block, `cluster create` and the runner share, with one set of defaults and one validation.
// How it is built (addresses, timeouts, where its files live) belongs to internal/cluster.
type LocalConfig struct {
	// Name is the cluster's name, `cluster` in a suite: it names host objects (the root veth
	// cnb-<name>), so it is short.
	Name      string `json:"cluster,omitempty"`
	Datapath  string `json:"datapath,omitempty"`
	ProxyMode string `json:"proxyMode,omitempty"`
	Nodes     int    `json:"nodes,omitempty"`
	// Kubernetes is the release the cluster runs (KubernetesVersions).
	Kubernetes string `json:"kubernetes,omitempty"`
	// CRI is the nodes' container runtime interface (CRIs).
	CRI string `json:"cri,omitempty"`
	// Registry gives the cluster a lab registry on its external host, which its nodes trust
	// and pull from: how a run meets a registry's TLS and credentials without leaving the lab.
	Registry bool `json:"registry,omitempty"`
	// MTU is the underlay's MTU, every link between the nodes: 9000 for jumbo frames. Each
	// datapath sizes its pods' interfaces from it (less its encapsulation's overhead). 0: an
	// existing cluster's, whatever it is; a new one gets DefaultMTU.
	MTU int `json:"mtu,omitempty"`
	// IPFamily is the cluster's addressing: ipv4, ipv6 (IPv6 only: nodes, pods and Services)
	// or dual (both; IPv4 first). "": an existing cluster's, whatever it is; a new one gets
	// ipv4.
	IPFamily string `json:"ipFamily,omitempty"`
	// Multus makes Multus the cluster's CNI, with the datapath as the network it delegates
	// every pod to (its cluster network), and gives the cluster the NetworkAttachmentDefinition
	// CRD and a macvlan secondary network (SecondaryNetwork) that pods can ask for.
	Multus bool `json:"multus,omitempty"`
}

// WithDefaults fills the settings left empty (zero nodes included) with their defaults; the
// kube-proxy mode follows the datapath.
func (c LocalConfig) WithDefaults() LocalConfig {
	if c.Name == "" {
		c.Name = DefaultClusterName
	}
	if c.Datapath == "" {
		c.Datapath = DefaultDatapath
	}
	if c.ProxyMode == "" {
		c.ProxyMode = DefaultProxyMode(c.Datapath)
	}
	if c.Nodes == 0 {
		c.Nodes = DefaultNodes
	}
	if c.Kubernetes == "" {
		c.Kubernetes = DefaultKubernetesVersion
	}
	if c.CRI == "" {
		c.CRI = CRIContainerd
	}
	return c
}

// Validate checks every setting as given (empty ones are refused: apply WithDefaults first)
// and returns each problem as a *setting.Error, joined.
func (c LocalConfig) Validate() error {
	var errs []error
	if err := CheckClusterName(c.Name); err != nil {
		errs = append(errs, err)
	}
	if c.Nodes < 1 || c.Nodes > MaxNodes {
		errs = append(errs, &setting.Error{Name: "nodes", Value: strconv.Itoa(c.Nodes), Want: fmt.Sprintf("expected a whole number from 1 to %d", MaxNodes)})
	}
	dp, err := LookupDatapath(c.Datapath)
	if err != nil {
		errs = append(errs, &setting.Error{Name: "datapath", Value: strconv.Quote(c.Datapath), Want: "expected one of " + strings.Join(DatapathNames(), ", ")})
	} else if err := checkProxyMode(dp, c.ProxyMode); err != nil {
		errs = append(errs, err)
	}
	if err := CheckKubernetesVersion(c.Kubernetes); err != nil {
		errs = append(errs, err)
	}
	if !slices.Contains(CRIs(), c.CRI) {
		errs = append(errs, &setting.Error{Name: "cri", Value: strconv.Quote(c.CRI), Want: "expected one of " + strings.Join(CRIs(), ", ")})
	}
	if c.MTU != 0 && (c.MTU < MinMTU || c.MTU > MaxMTU) {
		errs = append(errs, &setting.Error{Name: "mtu", Value: strconv.Itoa(c.MTU), Want: fmt.Sprintf("expected %d to %d bytes (%d: Ethernet, %d: jumbo frames)", MinMTU, MaxMTU, DefaultMTU, MaxMTU)})
	}
	if err := CheckIPFamily(c.IPFamily, c.Datapath); err != nil {
		errs = append(errs, err)
	}
	if err := CheckMultus(c.Multus, c.Datapath); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// CheckIPFamily refuses an unknown cluster family, IPv6 alone on a datapath whose IPv6 needs
// IPv4 beside it, and IPv6 in any form on a datapath that carries IPv4 alone, as a
// *setting.Error.
func CheckIPFamily(family, datapath string) error {
	if family == "" || family == IPv4 {
		return nil
	}
	fe := &setting.Error{Name: "ipFamily", Value: strconv.Quote(family)}
	if !slices.Contains(ClusterFamilies(), family) {
		fe.Want = "expected one of " + strings.Join(ClusterFamilies(), ", ")
		return fe
	}
	dp, err := LookupDatapath(datapath)
	switch {
	case err != nil:
		return nil
	case dp.IPv4Only != "":
		fe.Want = fmt.Sprintf("datapath %s carries IPv4 only here (%s); expected ipv4 (or leave it out)", datapath, dp.IPv4Only)
	case family == IPv6 && dp.NeedsIPv4 != "":
		fe.Want = fmt.Sprintf("datapath %s needs IPv4 beside IPv6 (%s); expected ipv4 or dual", datapath, dp.NeedsIPv4)
	default:
		return nil
	}
	return fe
}

// CheckMultus refuses Multus on a datapath it cannot delegate to, as a *setting.Error.
func CheckMultus(multus bool, datapath string) error {
	dp, err := LookupDatapath(datapath)
	if !multus || err != nil || dp.UnderMultus {
		return nil
	}
	return &setting.Error{Name: "multus", Value: "true",
		Want: fmt.Sprintf("Multus delegates here to %s only, not to datapath %s; expected false (or leave it out) for it",
			strings.Join(DatapathsWhere(func(d Datapath) bool { return d.UnderMultus }), ", "), datapath)}
}

// checkProxyMode refuses a kube-proxy mode the datapath cannot run with.
func checkProxyMode(dp Datapath, mode string) error {
	fe := &setting.Error{Name: "proxyMode", Value: strconv.Quote(mode)}
	switch {
	case dp.ReplacesKubeProxy && mode != ProxyNone:
		fe.Want = fmt.Sprintf("datapath %s replaces kube-proxy; expected none (or leave it out)", dp.Name)
	case !dp.ReplacesKubeProxy && !slices.Contains(ProxyModes(), mode):
		fe.Want = fmt.Sprintf("expected %s for datapath %s (none is for datapaths that replace kube-proxy: %s; IPVS is not in this kernel)",
			strings.Join(ProxyModes(), " or "), dp.Name, strings.Join(DatapathsWhere(func(d Datapath) bool { return d.ReplacesKubeProxy }), ", "))
	default:
		return nil
	}
	return fe
}

// clusterNameRE bounds names so that the root veth "cnb-<name>" fits the kernel's 15 bytes.
var clusterNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,9}[a-z0-9])?$`)

// CheckClusterName refuses a name that cannot name the cluster's host objects.
func CheckClusterName(name string) error {
	if clusterNameRE.MatchString(name) {
		return nil
	}
	return &setting.Error{Name: "cluster", Value: strconv.Quote(name),
		Want: "expected 1-11 characters of lowercase letters, digits and '-', starting and ending with a letter or digit"}
}
