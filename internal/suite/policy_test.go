package suite

import (
	"strings"
	"testing"
)

func TestParseNetworkPolicies(t *testing.T) {
	got, err := ParseNetworkPolicies("none,allow,allow+100,none+1000")
	if err != nil {
		t.Fatal(err)
	}
	want := []NetworkPolicy{{}, {Allow: true}, {Allow: true, Extra: 100}, {Extra: 1000}}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("variant %d: %+v, want %+v", i, got[i], want[i])
		}
		if again, err := ParseNetworkPolicy(got[i].String()); err != nil || again != got[i] {
			t.Errorf("%s does not parse back: %+v, %v", got[i], again, err)
		}
	}
	for in, msg := range map[string]string{
		"deny":           `"deny": expected none or allow`,
		"allow+":         `"allow+": expected +N`,
		"allow+-1":       `"allow+-1": expected +N`,
		"allow+20000":    "N from 0 to 10000",
		"allow,allow+0":  "allow: listed twice",
		"none,,allow":    `"": expected none or allow`,
		"allow+10,allow": "", // distinct variants are fine
	} {
		_, err := ParseNetworkPolicies(in)
		switch {
		case msg == "" && err != nil:
			t.Errorf("%q: %v", in, err)
		case msg != "" && (err == nil || !strings.Contains(err.Error(), msg) || !strings.HasPrefix(err.Error(), "networkPolicies: ")):
			t.Errorf("%q: error %v, want one naming networkPolicies with %q", in, err, msg)
		}
	}
}

func TestPolicyVariantsGetAClusterEach(t *testing.T) {
	variants, err := ParseNetworkPolicies("none,allow+1000")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Resolve("", Overrides{Datapaths: []string{"cilium-vxlan", "cilium-native"}, NetworkPolicies: variants})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, tg := range s.Targets {
		got[tg.Name] = tg.Local.Name + " " + tg.NetworkPolicy.String()
	}
	want := map[string]string{
		"cilium-vxlan.none": "civxlan-p0 none", "cilium-vxlan.allow+1000": "civxlan-p1 allow+1000",
		"cilium-native.none": "cinative-p0 none", "cilium-native.allow+1000": "cinative-p1 allow+1000",
	}
	if len(got) != len(want) {
		t.Fatalf("targets %v", got)
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("target %s: %q, want %q", name, got[name], w)
		}
	}
	// A long cluster name is shortened to leave room for the suffix within 11 characters.
	if c := variantCluster("abcdefghijk", 3); c != "abcdefgh-p3" {
		t.Errorf("variantCluster: %q", c)
	}
}

func TestPolicyVariantsRefused(t *testing.T) {
	allow := []NetworkPolicy{{Allow: true}}
	if _, err := Resolve("", Overrides{NetworkPolicies: allow}); err == nil ||
		!strings.Contains(err.Error(), "targets[0].networkPolicy: datapath bridge does not enforce NetworkPolicy") ||
		!strings.Contains(err.Error(), "cilium-native, cilium-vxlan") {
		t.Errorf("allow on bridge: %v", err)
	}
	// No policy at all is a valid variant on every datapath: the baseline.
	if _, err := Resolve("", Overrides{NetworkPolicies: []NetworkPolicy{{}}}); err != nil {
		t.Errorf("none on bridge: %v", err)
	}
	two := []NetworkPolicy{{}, {Allow: true}}
	if _, err := Resolve("", Overrides{Kubeconfig: "k", NetworkPolicies: two}); err == nil || !strings.Contains(err.Error(), "remote cluster") {
		t.Errorf("two variants on a remote target: %v", err)
	}
	if _, err := Parse([]byte("targets: [{name: a, local: {datapath: cilium-vxlan}, networkPolicy: {extra: 10001}}]")); err == nil ||
		!strings.Contains(err.Error(), "targets[0].networkPolicy.extra: expected 0-10000") {
		t.Errorf("extra out of range: %v", err)
	}
}

func TestExampleNetworkPolicySuite(t *testing.T) {
	s, err := Load("../../examples/network-policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tg := range s.Targets {
		names = append(names, tg.Name+"="+tg.NetworkPolicy.String())
	}
	if got := strings.Join(names, " "); got != "none=none allow=allow allow+100=allow+100 allow+1000=allow+1000" {
		t.Errorf("example targets: %s", got)
	}
	again, err := Parse([]byte(s.YAML()))
	if err != nil || again.YAML() != s.YAML() {
		t.Errorf("the stored YAML does not round-trip: %v\n%s", err, s.YAML())
	}
}
