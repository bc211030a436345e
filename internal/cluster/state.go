package cluster

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/cnibench/cnibench/internal/lab"
)

// DefaultStateRoot holds one directory per cluster; CNIBENCH_STATE overrides it.
const DefaultStateRoot = "/var/lib/cnibench/clusters"

// Status values of a cluster's state file.
const (
	StatusCreating = "creating"
	StatusReady    = "ready"
	StatusDeleting = "deleting"
)

// Spec is what a cluster was created with. It is written before any host object exists, so
// that delete can always recompute every name and range, even after a killed create.
type Spec struct {
	// LocalConfig is what the cluster was asked to be, its defaults filled. In state written
	// by older releases some settings are empty, each meaning what those releases built: the
	// accessors (ContainerRuntime, UnderlayMTU, Family) say so, and an empty Kubernetes
	// release is read as v1.34.2 (specFile).
	lab.LocalConfig
	Index int
	// Cgroups is the host's cgroup layout the cluster was built on (see cgroupTree.String).
	Cgroups string
	// Runtimes are the OCI runtime handlers the nodes offer (see Handlers).
	Runtimes []string
	// HasExternal says the cluster has its external host and egress gateway (External); false
	// in state written before they existed.
	HasExternal bool
	// External6 says the external host has its IPv6 addresses too (External.Direct6); false
	// without IPv6, and in state written before the egress paths carried it.
	External6 bool
	// GatewayAPI says the cluster has the Gateway API CRDs and the tools image k6 and Traefik.
	GatewayAPI bool
	// EnvoyGateway says the cluster runs Envoy Gateway beside the Gateway API (its CRDs, its
	// controller in EnvoyGatewayNamespace, and Envoy and its controller in the tools image).
	EnvoyGateway bool
	// ImageStore is where the nodes' runtime keeps images and container layers:
	// ImageStoreTmpfs or ImageStoreDisk (empty in state written before it was chosen: disk).
	ImageStore string
	Status     string
	Created    time.Time
	Images     Images
}

// specFile is a cluster's state file, cluster.json: its keys are older than lab.LocalConfig
// (name, kubernetesVersion, registry), and state already on disk keeps them.
type specFile struct {
	Name      string `json:"name"`
	Index     int    `json:"index"`
	Nodes     int    `json:"nodes"`
	Datapath  string `json:"datapath"`
	ProxyMode string `json:"proxyMode"`
	// KubernetesVersion is empty in state written before releases were selectable, which
	// ran v1.34.2.
	KubernetesVersion string   `json:"kubernetesVersion,omitempty"`
	Cgroups           string   `json:"cgroups,omitempty"`
	CRI               string   `json:"cri,omitempty"`
	Runtimes          []string `json:"runtimes,omitempty"`
	HasExternal       bool     `json:"external,omitempty"`
	External6         bool     `json:"external6,omitempty"`
	GatewayAPI        bool     `json:"gatewayAPI,omitempty"`
	EnvoyGateway      bool     `json:"envoyGateway,omitempty"`
	// HasRegistry is the cluster's lab registry (LocalConfig.Registry).
	HasRegistry bool      `json:"registry,omitempty"`
	Multus      bool      `json:"multus,omitempty"`
	MTU         int       `json:"mtu,omitempty"`
	IPFamily    string    `json:"ipFamily,omitempty"`
	ImageStore  string    `json:"imageStore,omitempty"`
	Status      string    `json:"status"`
	Created     time.Time `json:"created"`
	Images      Images    `json:"images"`
}

// kubernetesBeforeChoice is the release every cluster ran before releases were selectable.
const kubernetesBeforeChoice = "v1.34.2"

// MarshalJSON writes the spec with the state file's keys.
func (s Spec) MarshalJSON() ([]byte, error) {
	c := s.LocalConfig
	return json.Marshal(specFile{Name: c.Name, Index: s.Index, Nodes: c.Nodes, Datapath: c.Datapath, ProxyMode: c.ProxyMode,
		KubernetesVersion: c.Kubernetes, Cgroups: s.Cgroups, CRI: c.CRI, Runtimes: s.Runtimes, HasExternal: s.HasExternal, External6: s.External6,
		GatewayAPI: s.GatewayAPI, EnvoyGateway: s.EnvoyGateway, HasRegistry: c.Registry, Multus: c.Multus, MTU: c.MTU, IPFamily: c.IPFamily, ImageStore: s.ImageStore,
		Status: s.Status, Created: s.Created, Images: s.Images})
}

// UnmarshalJSON reads a state file, of this release or an older one.
func (s *Spec) UnmarshalJSON(data []byte) error {
	var f specFile
	if err := json.Unmarshal(data, &f); err != nil {
		return err
	}
	*s = Spec{
		LocalConfig: lab.LocalConfig{Name: f.Name, Datapath: f.Datapath, ProxyMode: f.ProxyMode, Nodes: f.Nodes,
			Kubernetes: cmp.Or(f.KubernetesVersion, kubernetesBeforeChoice), CRI: f.CRI, Registry: f.HasRegistry, Multus: f.Multus,
			MTU: f.MTU, IPFamily: f.IPFamily},
		Index: f.Index, Cgroups: f.Cgroups, Runtimes: f.Runtimes, HasExternal: f.HasExternal, External6: f.External6,
		GatewayAPI: f.GatewayAPI, EnvoyGateway: f.EnvoyGateway,
		ImageStore: f.ImageStore, Status: f.Status, Created: f.Created, Images: f.Images,
	}
	return nil
}

// Where a cluster's nodes keep their images and container layers (Spec.ImageStore). CRI-O's
// store is always on disk.
const (
	ImageStoreTmpfs = "tmpfs"
	ImageStoreDisk  = "disk"
)

// Images are the local image references a cluster's nodes hold.
type Images struct {
	Pause   string `json:"pause"`
	CoreDNS string `json:"coredns"`
	Tools   string `json:"tools"`
}

// UnderlayMTU is the MTU of every link between the cluster's namespaces.
func (s Spec) UnderlayMTU() int { return cmp.Or(s.MTU, lab.DefaultMTU) }

// Family is the cluster's IP family: ipv4, ipv6 or dual.
func (s Spec) Family() string { return cmp.Or(s.IPFamily, lab.IPv4) }

// Plan returns the cluster's address plan.
func (s Spec) Plan() Plan { return Plan{Index: s.Index, Family: s.IPFamily} }

// NodeName is the Kubernetes name of node i (1-based).
func (s Spec) NodeName(i int) string { return fmt.Sprintf("node%d", i) }

// CtlNetns is the namespace holding the underlay bridge and the control plane.
func (s Spec) CtlNetns() string { return "cnb-" + s.Name + "-ctl" }

// NodeNetns is node i's network namespace.
func (s Spec) NodeNetns(i int) string { return "cnb-" + s.Name + "-" + s.NodeName(i) }

// HostLink is the root namespace's veth into the underlay.
func (s Spec) HostLink() string { return "cnb-" + s.Name }

// CgroupRoot is the cluster's cgroup (in every hierarchy the host mounts: each v1 controller and
// the cgroup2 tree); every daemon and container of the cluster lives below it, which is how
// delete finds stray processes.
func (s Spec) CgroupRoot() string { return "/cnb-" + s.Name }

// Layout locates a cluster's files.
type Layout struct {
	Root string // state root, e.g. /var/lib/cnibench/clusters
}

// DefaultLayout honours CNIBENCH_STATE.
func DefaultLayout() Layout {
	if d := os.Getenv("CNIBENCH_STATE"); d != "" {
		return Layout{Root: d}
	}
	return Layout{Root: DefaultStateRoot}
}

// Dir is the cluster's state directory.
func (l Layout) Dir(name string) string { return filepath.Join(l.Root, name) }

// SpecFile is the cluster's spec.
func (l Layout) SpecFile(name string) string { return filepath.Join(l.Dir(name), "cluster.json") }

// Kubeconfig is the admin kubeconfig of the cluster.
func (l Layout) Kubeconfig(name string) string { return filepath.Join(l.Dir(name), "kubeconfig") }

// ExternalTokenFile is the token of the cluster's external agent: runs present it.
func (l Layout) ExternalTokenFile(name string) string {
	return filepath.Join(l.Dir(name), "external-token")
}

// LogDir holds the daemons' logs.
func (l Layout) LogDir(name string) string { return filepath.Join(l.Dir(name), "logs") }

// writeSpec stores the spec atomically.
func (l Layout) writeSpec(s Spec) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encode spec of %s: %w", s.Name, err)
	}
	if err := os.MkdirAll(l.Dir(s.Name), 0o700); err != nil {
		return fmt.Errorf("create state dir of %s: %w", s.Name, err)
	}
	tmp := l.SpecFile(s.Name) + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("write spec of %s: %w", s.Name, err)
	}
	if err := os.Rename(tmp, l.SpecFile(s.Name)); err != nil {
		return fmt.Errorf("write spec of %s: %w", s.Name, err)
	}
	return nil
}

// ReadSpec loads a cluster's spec; os.ErrNotExist when there is no such cluster.
func (l Layout) ReadSpec(name string) (Spec, error) {
	var s Spec
	data, err := os.ReadFile(l.SpecFile(name))
	if err != nil {
		return s, fmt.Errorf("read spec of cluster %s: %w", name, err)
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return s, fmt.Errorf("parse %s: %w", l.SpecFile(name), err)
	}
	return s, nil
}

// Names lists the clusters that have a state directory.
func (l Layout) Names() ([]string, error) {
	entries, err := os.ReadDir(l.Root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list clusters in %s: %w", l.Root, err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() && lab.CheckClusterName(e.Name()) == nil {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// lock serialises the allocation of names and ranges between concurrent cnibench processes.
func (l Layout) lock() (func(), error) {
	if err := os.MkdirAll(l.Root, 0o755); err != nil {
		return nil, fmt.Errorf("create state root %s: %w", l.Root, err)
	}
	f, err := os.OpenFile(filepath.Join(l.Root, ".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", l.Root, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", l.Root, err)
	}
	// Closing the descriptor releases the lock.
	return func() { f.Close() }, nil
}

// Satisfies returns nil when the cluster is what want asks for (a config with its defaults
// filled) and offers every runtime handler named; otherwise one error naming every setting
// that differs. A cluster with more nodes than asked satisfies; want's MTU and IP family, when
// empty, accept the cluster's; a cluster with a lab registry satisfies a config without one.
func (s Spec) Satisfies(want lab.LocalConfig, runtimes []string) error {
	var have, asked []string
	differ := func(what string, h, w any) {
		have, asked = append(have, fmt.Sprintf("%s %v", what, h)), append(asked, fmt.Sprintf("%s %v", what, w))
	}
	if s.Datapath != want.Datapath {
		differ("datapath", s.Datapath, want.Datapath)
	}
	if s.ProxyMode != want.ProxyMode {
		differ("kube-proxy", s.ProxyMode, want.ProxyMode)
	}
	if s.Nodes < want.Nodes {
		have, asked = append(have, fmt.Sprintf("%d nodes", s.Nodes)), append(asked, fmt.Sprintf("%d nodes", want.Nodes))
	}
	if s.Kubernetes != want.Kubernetes {
		differ("Kubernetes", s.Kubernetes, want.Kubernetes)
	}
	if s.ContainerRuntime() != want.CRI {
		differ("CRI", s.ContainerRuntime(), want.CRI)
	}
	if want.MTU != 0 && s.UnderlayMTU() != want.MTU {
		differ("underlay MTU", s.UnderlayMTU(), want.MTU)
	}
	if want.IPFamily != "" && s.Family() != want.IPFamily {
		differ("IP family", s.Family(), want.IPFamily)
	}
	if want.Registry && !s.Registry {
		have, asked = append(have, "no lab registry"), append(asked, "a lab registry")
	}
	if s.Multus != want.Multus {
		differ("multus", s.Multus, want.Multus)
	}
	if missing := slices.DeleteFunc(slices.Clone(runtimes), func(r string) bool { return slices.Contains(s.Handlers(), r) }); len(missing) > 0 {
		differ("runtimes", strings.Join(s.Handlers(), "/"), strings.Join(runtimes, "/"))
	}
	if len(have) == 0 {
		return nil
	}
	return fmt.Errorf("local cluster %s exists with %s; the suite asks for %s: delete it or name another cluster",
		s.Name, strings.Join(have, ", "), strings.Join(asked, ", "))
}
