package cluster

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/lab"
)

// oldStateFile is a cluster.json as the release before Spec held a lab.LocalConfig wrote it,
// with every key it knew.
const oldStateFile = `{
  "name": "jumbo",
  "index": 2,
  "nodes": 3,
  "datapath": "flannel-vxlan",
  "proxyMode": "iptables",
  "kubernetesVersion": "v1.37.2",
  "cgroups": "cgroup v1 + v2 (hybrid)",
  "cri": "containerd",
  "runtimes": [
    "runc",
    "crun",
    "runsc"
  ],
  "external": true,
  "gatewayAPI": true,
  "registry": true,
  "mtu": 9000,
  "ipFamily": "dual",
  "imageStore": "tmpfs",
  "status": "ready",
  "created": "2026-11-20T10:00:00Z",
  "images": {
    "pause": "cnibench.local/pause:1",
    "coredns": "cnibench.local/coredns:2",
    "tools": "cnibench.local/tools:3"
  }
}`

// State written before the settings were one lab.LocalConfig loads with the same meaning, and
// is written back byte for byte as it was.
func TestSpecReadsOldState(t *testing.T) {
	var s Spec
	if err := json.Unmarshal([]byte(oldStateFile), &s); err != nil {
		t.Fatal(err)
	}
	want := Spec{
		LocalConfig: lab.LocalConfig{Name: "jumbo", Datapath: "flannel-vxlan", ProxyMode: "iptables", Nodes: 3, Kubernetes: "v1.37.2",
			CRI: lab.CRIContainerd, Registry: true, MTU: 9000, IPFamily: lab.DualStack},
		Index: 2, Cgroups: "cgroup v1 + v2 (hybrid)", Runtimes: []string{"runc", "crun", "runsc"}, HasExternal: true, GatewayAPI: true,
		ImageStore: ImageStoreTmpfs, Status: StatusReady, Created: time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC),
		Images: Images{Pause: "cnibench.local/pause:1", CoreDNS: "cnibench.local/coredns:2", Tools: "cnibench.local/tools:3"},
	}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("loaded\n%+v\nwant\n%+v", s, want)
	}
	if addr, ok := s.LabRegistry(); !ok || addr != "10.202.0.200:5000" {
		t.Errorf("LabRegistry() = %s, %v", addr, ok)
	}
	out, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != oldStateFile {
		t.Errorf("written back as\n%s\nwant\n%s", out, oldStateFile)
	}
}

// The oldest state files lack the settings chosen since; each reads as what those releases
// built.
func TestSpecReadsOldestState(t *testing.T) {
	var s Spec
	if err := json.Unmarshal([]byte(`{"name": "a", "index": 0, "nodes": 2, "datapath": "bridge", "proxyMode": "nftables", "status": "ready",
		"created": "2025-01-02T03:04:05Z", "images": {"pause": "p", "coredns": "c", "tools": "t"}}`), &s); err != nil {
		t.Fatal(err)
	}
	if s.Name != "a" || s.Nodes != 2 || s.Datapath != "bridge" || s.ProxyMode != lab.ProxyNftables || s.Status != StatusReady {
		t.Errorf("loaded %+v", s)
	}
	if s.Kubernetes != "v1.34.2" || s.ContainerRuntime() != lab.CRIContainerd || s.UnderlayMTU() != lab.DefaultMTU ||
		s.Family() != lab.IPv4 || !reflect.DeepEqual(s.Handlers(), lab.DefaultRuntimes()) || s.Registry || s.HasExternal {
		t.Errorf("old state's defaults: Kubernetes %s, CRI %s, MTU %d, family %s, handlers %v, registry %v, external %v",
			s.Kubernetes, s.ContainerRuntime(), s.UnderlayMTU(), s.Family(), s.Handlers(), s.Registry, s.HasExternal)
	}
}

// Satisfies names every setting in which an existing cluster differs from what is asked, in
// one error; more nodes than asked, and settings left to the cluster, are no difference.
func TestSatisfies(t *testing.T) {
	have := Spec{LocalConfig: lab.LocalConfig{Name: "lab", Datapath: "bridge", ProxyMode: lab.ProxyNftables, Nodes: 3,
		Kubernetes: lab.DefaultKubernetesVersion, CRI: lab.CRIContainerd, MTU: 9000, IPFamily: lab.DualStack}, Runtimes: []string{"runc", "crun"}}
	base := lab.LocalConfig{Name: "lab"}.WithDefaults()
	const prefix, suffix = "local cluster lab exists with ", ": delete it or name another cluster"
	for _, c := range []struct {
		name     string
		want     func(*lab.LocalConfig)
		runtimes []string
		err      string // "" for none
	}{
		{"same", func(*lab.LocalConfig) {}, nil, ""},
		{"fewer nodes", func(w *lab.LocalConfig) { w.Nodes = 2 }, nil, ""},
		{"MTU and family of the cluster's", func(w *lab.LocalConfig) { w.MTU, w.IPFamily = 9000, lab.DualStack }, []string{"crun"}, ""},
		{"datapath", func(w *lab.LocalConfig) { w.Datapath, w.ProxyMode = "cilium-kpr", lab.ProxyNone }, nil,
			"datapath bridge, kube-proxy nftables; the suite asks for datapath cilium-kpr, kube-proxy none"},
		{"more nodes", func(w *lab.LocalConfig) { w.Nodes = 4 }, nil, "3 nodes; the suite asks for 4 nodes"},
		{"Kubernetes and CRI", func(w *lab.LocalConfig) { w.Kubernetes, w.CRI = "v1.34.2", lab.CRICrio }, nil,
			"Kubernetes " + lab.DefaultKubernetesVersion + ", CRI containerd; the suite asks for Kubernetes v1.34.2, CRI crio"},
		{"MTU", func(w *lab.LocalConfig) { w.MTU = 1500 }, nil, "underlay MTU 9000; the suite asks for underlay MTU 1500"},
		{"family", func(w *lab.LocalConfig) { w.IPFamily = lab.IPv6 }, nil, "IP family dual; the suite asks for IP family ipv6"},
		{"registry", func(w *lab.LocalConfig) { w.Registry = true }, nil, "no lab registry; the suite asks for a lab registry"},
		{"runtimes", func(*lab.LocalConfig) {}, []string{"runc", "runsc"}, "runtimes runc/crun; the suite asks for runtimes runc/runsc"},
		{"all at once", func(w *lab.LocalConfig) { w.Datapath, w.Nodes, w.MTU, w.Registry = "flannel-vxlan", 5, 1500, true }, []string{"youki"},
			"datapath bridge, 3 nodes, underlay MTU 9000, no lab registry, runtimes runc/crun; " +
				"the suite asks for datapath flannel-vxlan, 5 nodes, underlay MTU 1500, a lab registry, runtimes youki"},
	} {
		want := base
		c.want(&want)
		err := have.Satisfies(want, c.runtimes)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.err != "" && (err == nil || err.Error() != prefix+c.err+suffix):
			t.Errorf("%s: error %v\nwant %s", c.name, err, prefix+c.err+suffix)
		}
	}
	// A cluster from before CRIs, MTUs and families were chosen has their defaults.
	old := Spec{LocalConfig: lab.LocalConfig{Name: "old", Datapath: "bridge", ProxyMode: lab.ProxyNftables, Nodes: 2, Kubernetes: "v1.34.2"}}
	want := lab.LocalConfig{Name: "old", Kubernetes: "v1.34.2", MTU: lab.DefaultMTU, IPFamily: lab.IPv4}.WithDefaults()
	if err := old.Satisfies(want, []string{"crun"}); err != nil {
		t.Errorf("old state: %v", err)
	}
	if err := old.Satisfies(want, []string{"runsc"}); err == nil || !strings.Contains(err.Error(), "runtimes runc/crun;") {
		t.Errorf("old state offers the default runtimes: %v", err)
	}
}
