package suite

import (
	"reflect"
	"testing"
)

// TestPathTable holds the table to the lists the suite, the checks and the reports knew
// before it: every path once, in display order, the one-node paths and the egress ones.
func TestPathTable(t *testing.T) {
	if got, want := AllPaths(), []string{HostNetwork, SameNode, CrossNode, PodToService, Localhost, Egress, EgressGateway, Gateway, Secondary, SecondarySameNode}; !reflect.DeepEqual(got, want) {
		t.Errorf("AllPaths() = %v, want %v", got, want)
	}
	if got, want := OneNodePaths(), []string{SameNode, Localhost, SecondarySameNode}; !reflect.DeepEqual(got, want) {
		t.Errorf("OneNodePaths() = %v, want %v", got, want)
	}
	seen := map[string]bool{}
	for _, p := range PathTable() {
		if seen[p.Name] {
			t.Errorf("path %s is in the table twice", p.Name)
		}
		seen[p.Name] = true
		if got, want := IsEgress(p.Name), p.Name == Egress || p.Name == EgressGateway; got != want {
			t.Errorf("IsEgress(%s) = %v", p.Name, got)
		}
		if p.Client == "" {
			t.Errorf("path %s has no client pod", p.Name)
		}
		// A server in the fixture is reached at a pod's, a Service's or the loopback address.
		if inFixture := p.Address == AddrPod || p.Address == AddrService || p.Address == AddrLoopback || p.Address == AddrSecondary; inFixture != (p.Server != "") {
			t.Errorf("path %s: server pod %q with address %d", p.Name, p.Server, p.Address)
		}
	}
	if _, ok := PathOf("pod-to-pod"); ok || IsEgress("pod-to-pod") {
		t.Error("an unknown name is a path")
	}
}
