package runner

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/cnibench/cnibench/internal/agentcmd"
	"github.com/cnibench/cnibench/internal/catalog"
	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/monitor"
	"github.com/cnibench/cnibench/internal/suite"
)

// GatewayOffer is what a provider says of a target's Gateway API: a local cluster deploys
// Traefik itself when it has the CRDs and binaries, and serves a Gateway with Envoy Gateway
// when it runs it; a remote one names its GatewayClass.
type GatewayOffer struct {
	Available bool   // the Gateway API can be measured at all
	ClassName string // an existing class; empty deploys Traefik, or uses Envoy Gateway
	Why       string // why not, when not available
	// Envoy says the cluster runs Envoy Gateway, EnvoyFact which (for the fingerprint);
	// EnvoyWhy why not, for a target that asks.
	Envoy               bool
	EnvoyFact, EnvoyWhy string
}

// splitGateway is the deployed split of a target.
type splitGateway struct {
	*kube.Gateway
	host string
	port int
}

// splitWeights lists the suite's gateway-split weights, once each.
func splitWeights(s suite.Suite) []int {
	var out []int
	for _, w := range s.Workloads {
		if w.Kind == engine.GatewaySplit && !slices.Contains(out, w.Weight) {
			out = append(out, w.Weight)
		}
	}
	return out
}

// prepareGateway deploys the split when the suite measures the gateway path and waits until
// every route answers with a backend's name from the client pod.
func (r *run) prepareGateway(ctx context.Context, tg *target, t suite.Target, offer GatewayOffer, image string, placement kube.Placement) error {
	weights := splitWeights(r.opts.Suite)
	if len(weights) == 0 {
		return nil
	}
	if !offer.Available {
		return fmt.Errorf("path %s: %s", suite.Gateway, offer.Why)
	}
	envoy := t.Local != nil && t.GatewayImpl() == lab.GatewayEnvoy
	if envoy && !offer.Envoy {
		return fmt.Errorf("gateway %s: %s", t.Gateway, offer.EnvoyWhy)
	}
	began := time.Now()
	g, err := tg.client.DeployGateway(ctx, kube.GatewaySpec{Namespace: tg.namespace, RunID: r.id, Image: image, PullSecret: r.opts.ImagePullSecret,
		Node: placement.NodeB, ClassName: offer.ClassName, Envoy: envoy, Variant: variantSuffix(t), Weights: weights,
		TolerateTaints: r.opts.Placement.TolerateTaints, Hosts: engine.SplitHost})
	if err != nil {
		return fmt.Errorf("path %s: %w", suite.Gateway, err)
	}
	if g.First != engine.SplitFirstBackend {
		return fmt.Errorf("path %s: the first backend is %s, the load counts %s", suite.Gateway, g.First, engine.SplitFirstBackend)
	}
	u, err := url.Parse(g.URL)
	if err != nil {
		return err
	}
	port, _ := strconv.Atoi(u.Port())
	tg.gateway = &splitGateway{Gateway: g, host: u.Hostname(), port: port}
	for _, w := range weights {
		if err := r.waitRoute(ctx, tg, engine.SplitHost(w)); err != nil {
			return fmt.Errorf("path %s: %w", suite.Gateway, err)
		}
	}
	tg.fingerprint["gateway_class"] = g.Class
	switch {
	case envoy:
		tg.fingerprint["gateway"] = offer.EnvoyFact
	case g.Controller != "":
		tg.fingerprint["gateway"] = "traefik (deployed by the run)"
	}
	r.progress("target %s: Gateway API split ready at %s (class %s) in %.1fs", tg.name, g.URL, g.Class, time.Since(began).Seconds())
	return nil
}

// waitRoute polls the route of host from the client pod until a backend answers through it:
// an accepted route may take a moment more to be programmed in the data plane.
func (r *run) waitRoute(ctx context.Context, tg *target, host string) error {
	client := tg.fixture.Pod(kube.RoleClient, 0).Name
	var last string
	err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		tctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		out, err := tg.client.Exec(tctx, tg.namespace, client, kube.ClientContainer,
			agentcmd.HTTPGetCmd{URL: tg.gateway.URL, Host: host}.Argv())
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = strings.TrimSpace(string(out))
		return strings.HasPrefix(last, "cnibench-backend-"), nil
	})
	if err != nil {
		return fmt.Errorf("route %s never answered with a backend through %s (last: %s): %w", host, tg.gateway.URL, last, err)
	}
	return nil
}

// gatewayEnd is the gateway path's endpoint: the client pod to the Gateway, with the deployed
// controller read for its CPU and memory beside the client.
func (t *target) gatewayEnd() (pairEnd, error) {
	if t.gateway == nil {
		return pairEnd{}, fmt.Errorf("path %s: the target has no gateway", suite.Gateway)
	}
	f := t.fixture
	client := podContainer{pod: f.Pod(kube.RoleClient, 0).Name, container: kube.ClientContainer}
	stat := []podContainer{client}
	if g := t.gateway; g.Controller != "" {
		stat = append(stat, podContainer{pod: g.Controller, container: g.ControllerContainer, namespace: g.ControllerNamespace, gateway: true})
	}
	return pairEnd{client.pod, t.gateway.host, t.gateway.port, stat}, nil
}

// gatewayResources adds the controller's own CPU and memory to a gateway sample: the study's
// figures for the implementation, apart from the load generator's.
func gatewayResources(res map[string]float64, end pairEnd, before, after []monitor.NodeStat, d time.Duration) {
	for i, pc := range end.statPods {
		if !pc.gateway || i >= len(before) || i >= len(after) {
			continue
		}
		if u, err := monitor.Delta(before[i], after[i]); err == nil && u.CgroupCPUSeconds >= 0 && d > 0 {
			res[catalog.GatewayCPU] = 100 * u.CgroupCPUSeconds / d.Seconds()
		}
		if m := after[i].CgroupMemoryBytes; m >= 0 {
			res[catalog.GatewayMemory] = float64(m) / (1 << 20)
		}
	}
}
