package lab

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/setting"
)

func TestDatapathFacts(t *testing.T) {
	names := DatapathNames()
	if !slices.IsSorted(names) || len(slices.Compact(slices.Clone(names))) != len(names) {
		t.Errorf("datapath names not sorted and unique: %v", names)
	}
	if got := DefaultProxyMode("cilium-kpr"); got != ProxyNone {
		t.Errorf("cilium-kpr's default proxy mode %q, want %q", got, ProxyNone)
	}
	if got := DefaultProxyMode("flannel-vxlan"); got != ProxyNftables {
		t.Errorf("flannel-vxlan's default proxy mode %q, want %q", got, ProxyNftables)
	}
	if _, err := LookupDatapath("calico"); err == nil || !strings.Contains(err.Error(), `"calico": expected one of bridge, calico-ebpf, calico-vxlan`) {
		t.Errorf("LookupDatapath(calico) = %v", err)
	}
	enforcing := DatapathsWhere(func(d Datapath) bool { return d.EnforcesNetworkPolicy })
	if slices.Contains(enforcing, "bridge") || !slices.Contains(enforcing, "cilium-vxlan") || !slices.Contains(enforcing, "canal") {
		t.Errorf("datapaths enforcing NetworkPolicy: %v", enforcing)
	}
}

func TestRuntimeVocabulary(t *testing.T) {
	if got := HandlersFor(CRICrio); !slices.Equal(got, []string{RuntimeRunc}) {
		t.Errorf("CRI-O offers %v, want runc only", got)
	}
	for _, h := range DefaultRuntimes() {
		if !slices.Contains(HandlersFor(CRIContainerd), h) {
			t.Errorf("default handler %s not offered by containerd", h)
		}
	}
	if err := CheckKubernetesVersion(DefaultKubernetesVersion); err != nil {
		t.Error(err)
	}
	if err := CheckKubernetesVersion("v1.20.0"); err == nil || !strings.Contains(err.Error(), `"v1.20.0": expected one of `+DefaultKubernetesVersion) {
		t.Errorf("CheckKubernetesVersion(v1.20.0) = %v", err)
	}
}

// One validation for every way of describing a local cluster: each setting refused names
// itself, its value and what was expected, and all of them are reported at once.
func TestLocalConfigValidate(t *testing.T) {
	if err := (LocalConfig{}).WithDefaults().Validate(); err != nil {
		t.Fatalf("the defaults refused: %v", err)
	}
	if got := (LocalConfig{Datapath: "cilium-kpr"}).WithDefaults(); got.ProxyMode != ProxyNone || got.Nodes != DefaultNodes || got.Name != DefaultClusterName {
		t.Errorf("defaults for cilium-kpr: %+v", got)
	}
	ok := LocalConfig{}.WithDefaults()
	for _, c := range []struct {
		mod  func(*LocalConfig)
		want string
	}{
		{func(c *LocalConfig) { c.Name = "UPPER" }, `cluster: "UPPER": expected 1-11 characters`},
		{func(c *LocalConfig) { c.Name = "twelve-chars" }, `cluster: "twelve-chars"`},
		{func(c *LocalConfig) { c.Nodes = 0 }, "nodes: 0: expected a whole number from 1 to 50"},
		{func(c *LocalConfig) { c.Nodes = MaxNodes + 1 }, "nodes: 51:"},
		{func(c *LocalConfig) { c.Datapath = "weave" }, `datapath: "weave": expected one of bridge`},
		{func(c *LocalConfig) { c.ProxyMode = "ipvs" }, `proxyMode: "ipvs": expected nftables or iptables for datapath bridge (none is for datapaths that replace kube-proxy: calico-ebpf, cilium-kpr`},
		{func(c *LocalConfig) { c.ProxyMode = ProxyNone }, `proxyMode: "none": expected nftables or iptables`},
		{func(c *LocalConfig) { c.Datapath, c.ProxyMode = "cilium-kpr", ProxyIptables }, `proxyMode: "iptables": datapath cilium-kpr replaces kube-proxy`},
		{func(c *LocalConfig) { c.Kubernetes = "v1.99.0" }, `kubernetes: "v1.99.0": expected one of v1.37.2`},
		{func(c *LocalConfig) { c.CRI = "docker" }, `cri: "docker": expected one of containerd, crio`},
		{func(c *LocalConfig) { c.MTU = 1279 }, "mtu: 1279: expected 1280 to 9000 bytes"},
		{func(c *LocalConfig) { c.MTU = 9001 }, "mtu: 9001: expected 1280 to 9000 bytes"},
		{func(c *LocalConfig) { c.IPFamily = "v6" }, `ipFamily: "v6": expected one of ipv4, ipv6, dual`},
		{func(c *LocalConfig) { c.Multus = true }, `multus: true: Multus delegates here to cilium-vxlan, flannel-host-gw, flannel-vxlan only, not to datapath bridge`},
		{func(c *LocalConfig) { c.Datapath, c.ProxyMode, c.Multus = "cilium-kpr", ProxyNone, true }, `multus: true: Multus delegates here to`},
		{func(c *LocalConfig) { c.Datapath, c.IPFamily = "cilium-kpr", IPv6 }, `ipFamily: "ipv6": datapath cilium-kpr needs IPv4 beside IPv6 (its egress gateway`},
		{func(c *LocalConfig) { c.Datapath, c.ProxyMode, c.IPFamily = "calico-ebpf", ProxyNone, IPv6 }, `ipFamily: "ipv6": datapath calico-ebpf carries IPv4 only here (this kernel's verifier rejects`},
		{func(c *LocalConfig) { c.Datapath, c.ProxyMode, c.IPFamily = "calico-ebpf", ProxyNone, DualStack }, `ipFamily: "dual": datapath calico-ebpf carries IPv4 only here`},
		{func(c *LocalConfig) { c.Datapath, c.ProxyMode = "calico-ebpf", ProxyNftables }, `proxyMode: "nftables": datapath calico-ebpf replaces kube-proxy`},
	} {
		cfg := ok
		c.mod(&cfg)
		err := cfg.Validate()
		var fe *setting.Error
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &fe) {
			t.Errorf("%+v: %v, want a *setting.Error containing %q", cfg, err, c.want)
		}
	}
	for _, dp := range []string{"cilium-kpr", "calico-ebpf"} {
		if err := (LocalConfig{Datapath: dp}).WithDefaults().Validate(); err != nil {
			t.Errorf("%s without kube-proxy: %v", dp, err)
		}
	}
	for _, dp := range []string{"flannel-vxlan", "cilium-vxlan"} {
		if err := (LocalConfig{Datapath: dp, Multus: true}).WithDefaults().Validate(); err != nil {
			t.Errorf("%s under Multus: %v", dp, err)
		}
	}
	for _, f := range []string{IPv6, DualStack} {
		if err := (LocalConfig{Datapath: "flannel-vxlan", IPFamily: f}).WithDefaults().Validate(); err != nil {
			t.Errorf("flannel-vxlan %s: %v", f, err)
		}
	}
	err := LocalConfig{Name: "A", Nodes: -1, Datapath: "x", Kubernetes: "v1", CRI: "y", MTU: 1}.Validate()
	if n := strings.Count(err.Error(), "\n") + 1; n != 6 {
		t.Errorf("every setting refused at once, got %d lines:\n%v", n, err)
	}
}
