package cluster

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/cnibench/cnibench/internal/cluster/binaries"
	"github.com/cnibench/cnibench/internal/cluster/datapath"
)

// gatewaySet is what a cluster carries of the Gateway API: the split (its CRDs, Traefik and
// k6) and, beside it, Envoy Gateway.
type gatewaySet struct{ api, envoy bool }

// gatewayComponents are what the Gateway API split needs on a local cluster: Traefik and k6,
// both in the tools image, and the Gateway API CRDs, and with envoy Envoy Gateway and Envoy.
// A create that asks for the split (Options.GatewayAPI: `cluster create --gateway-api`, or a
// run whose suite has the gateway path) builds them on first use; a cluster created without it
// measures everything else.
func gatewayComponents(envoy bool) ([]binaries.Component, error) {
	names := []string{binaries.Traefik, binaries.GatewayAPI, binaries.K6}
	if envoy {
		names = append(names, binaries.Envoy, binaries.EnvoyGateway)
	}
	var out []binaries.Component
	for _, name := range names {
		comp, err := binaries.Lookup(name)
		if err != nil {
			return nil, err
		}
		out = append(out, comp)
	}
	return out, nil
}

// imageTools returns the built binaries a local cluster's tools image carries: every tool of
// binaries.ImageTools, the split's only where the cluster has it and Envoy Gateway's only where
// it runs it (ensureDependencies built them).
func imageTools(bins binPaths, gw gatewaySet) []string {
	var out []string
	for _, t := range binaries.ImageTools() {
		if (!t.Split || gw.api) && (!t.Envoy || gw.envoy) {
			out = append(out, bins.bin(t.Binary))
		}
	}
	return out
}

// installGatewayAPI installs the Gateway API CRDs on a cluster with the split; the run deploys
// Traefik and the routes itself.
func installGatewayAPI(ctx context.Context, ac *actionContext) error {
	k, crds := kubectlOf(ac.layout, ac.spec.Name, ac.bins), ac.bins.bin(binaries.GatewayAPICRDs)
	if err := k.Run(ctx, nil, "apply", "--server-side", "--force-conflicts", "-f", crds); err != nil {
		return fmt.Errorf("install Gateway API %s CRDs: %w", binaries.GatewayAPIVersion, err)
	}
	if err := k.Run(ctx, nil, "wait", "--for=condition=Established", "--timeout=60s", "-f", crds); err != nil {
		return fmt.Errorf("wait for Gateway API CRDs: %w", err)
	}
	ac.spec.GatewayAPI = true
	return ac.save()
}

// kubectlOf is the cluster's kubectl, against it.
func kubectlOf(l Layout, name string, bins binPaths) datapath.Kubectl {
	return datapath.Kubectl{Bin: bins.kube("kubectl"), Kubeconfig: l.Kubeconfig(name), Cache: filepath.Join(l.Dir(name), "kubectl-cache")}
}
