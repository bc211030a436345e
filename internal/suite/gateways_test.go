package suite

import (
	"strings"
	"testing"
)

// gatewaySuite measures the split only; each case adds its targets.
const gatewaySuite = `
paths: [gateway]
workloads: [{kind: gateway-split, weight: 40, vus: [1, 100]}]
duration: 5s
repetitions: 2
`

// TestTwoGatewaysShareOneCluster checks that two targets may name one local cluster when they
// go through two Gateway API implementations, and expand into their own targets of it.
func TestTwoGatewaysShareOneCluster(t *testing.T) {
	s, err := Parse([]byte(`targets:
  - {name: traefik, local: {cluster: gw, datapath: bridge}}
  - {name: envoy, local: {cluster: gw, datapath: bridge}, gateway: envoy}
` + gatewaySuite))
	if err != nil {
		t.Fatal(err)
	}
	x := s.Expand()
	if len(x.Targets) != 2 || x.Targets[0].GatewayImpl() != "traefik" || x.Targets[1].GatewayImpl() != "envoy" {
		t.Fatalf("targets %+v", x.Targets)
	}
	if x.Targets[0].Local.Name != "gw" || x.Targets[1].Local.Name != "gw" {
		t.Errorf("clusters %s, %s; want both gw", x.Targets[0].Local.Name, x.Targets[1].Local.Name)
	}
	if cells := len(x.Matrix()); cells != 4 {
		t.Errorf("%d cells, want 2 targets x 2 levels", cells)
	}
}

// TestGatewayChoiceValidation checks that each misuse of a target's gateway is refused with one
// error naming the setting and what was expected.
func TestGatewayChoiceValidation(t *testing.T) {
	for _, c := range []struct{ targets, rest, want string }{
		{"[{name: a, local: {datapath: bridge}, gateway: nginx}]", gatewaySuite,
			`targets[0].gateway: "nginx": expected one of traefik, envoy`},
		{"[{name: a, kubeconfig: /k, gateway: envoy}]", gatewaySuite,
			"targets[0].gateway: a remote cluster's Gateway API implementation is the GatewayClass it names; expected gatewayClassName instead"},
		{"[{name: a, local: {datapath: bridge}, gateway: envoy}]", "paths: [cross-node]\nworkloads: [{kind: tcp-rr, size: 1}]\n",
			`targets[0].gateway: "envoy" chooses the implementation of path gateway, which the suite does not measure`},
		{"[{name: a, local: {cluster: gw, datapath: bridge}}, {name: b, local: {cluster: gw, datapath: bridge}, gateway: traefik}]", gatewaySuite,
			`targets[1].local.cluster: "gw" is used by two targets; each target needs a cluster of its own (two targets share one only to compare gateways: traefik, envoy)`},
		{"[{name: a, local: {cluster: gw, datapath: bridge}}, {name: b, local: {cluster: gw, datapath: flannel-vxlan}, gateway: envoy}]", gatewaySuite,
			`targets[1].local.cluster: "gw" is also target a's, with another local block`},
	} {
		_, err := Parse([]byte("targets: " + c.targets + "\n" + c.rest))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.targets, err, c.want)
			continue
		}
		if lines := strings.Count(strings.TrimSpace(err.Error()), "\n") + 1; lines != 1 {
			t.Errorf("%s: %d errors, want this one alone:\n%v", c.targets, lines, err)
		}
	}
}
