package runner

import (
	"context"
	"testing"

	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/suite"
)

// stubProvider is a local cluster's provider that records what the run asked of it.
type stubProvider struct{ run ProviderRun }

func (p *stubProvider) Ensure(context.Context) (Provided, error) { return Provided{}, nil }
func (p *stubProvider) ReleasesObjects() bool                    { return false }
func (p *stubProvider) Release(context.Context) error            { return nil }
func (p *stubProvider) Lost(context.Context, *kube.Client, []string) Loss {
	return Loss{}
}

// TestTwoGatewaysShareTheirClustersProvider plans a suite whose targets compare Traefik and
// Envoy Gateway on one local cluster, and Traefik alone on another: the shared cluster gets
// one provider, asked for Envoy Gateway, and each target a namespace of its own; the other
// cluster is not asked for it.
func TestTwoGatewaysShareTheirClustersProvider(t *testing.T) {
	s, err := suite.Parse([]byte(`targets:
  - {name: traefik, local: {cluster: gw, datapath: bridge}}
  - {name: envoy, local: {cluster: gw, datapath: bridge}, gateway: envoy}
  - {name: other, local: {cluster: gw2, datapath: bridge}}
paths: [gateway]
workloads: [{kind: gateway-split, weight: 40, vus: [1]}]
duration: 5s
repetitions: 2
`))
	if err != nil {
		t.Fatal(err)
	}
	s = s.Expand()
	asked := map[string]*stubProvider{}
	r := &run{id: "20261128-000000-abcd", providers: map[string]Provider{}, opts: Options{Suite: s,
		Local: func(l suite.Local, pr ProviderRun) Provider {
			p := &stubProvider{run: pr}
			asked[l.Name] = p
			return p
		}}}
	namespaces := map[string]bool{}
	for _, tgt := range s.Targets {
		r.providerFor(tgt)
		tg, _, err := r.newTarget(tgt)
		if err != nil {
			t.Fatal(err)
		}
		key := tgt.Local.Name + "/" + tg.namespace
		if namespaces[key] {
			t.Errorf("target %s: namespace %s is another target's on its cluster", tgt.Name, key)
		}
		namespaces[key] = true
	}
	if len(r.providers) != 2 {
		t.Fatalf("%d providers, want one per cluster", len(r.providers))
	}
	if p := asked["gw"]; p == nil || !p.run.GatewayAPI || !p.run.EnvoyGateway {
		t.Errorf("cluster gw asked for %+v, want the Gateway API and Envoy Gateway", p)
	}
	if p := asked["gw2"]; p == nil || !p.run.GatewayAPI || p.run.EnvoyGateway {
		t.Errorf("cluster gw2 asked for %+v, want the Gateway API without Envoy Gateway", p)
	}
}
