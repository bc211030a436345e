package lab

import (
	"slices"
	"strings"
	"testing"
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
	if _, err := LookupDatapath("calico"); err == nil || !strings.Contains(err.Error(), `"calico": expected one of bridge, calico-vxlan`) {
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
