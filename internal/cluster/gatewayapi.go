package cluster

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/cnibench/cnibench/internal/cluster/binaries"
	"github.com/cnibench/cnibench/internal/cluster/datapath"
)

// gatewayComponents are what the Gateway API split needs on a local cluster: Traefik and k6,
// both in the tools image, and the Gateway API CRDs. A create that asks for the split
// (Options.GatewayAPI: `cluster create --gateway-api`, or a run whose suite has the gateway
// path) builds them on first use; a cluster created without it measures everything else.
func gatewayComponents() ([]binaries.Component, error) {
	var out []binaries.Component
	for _, name := range []string{binaries.Traefik, binaries.GatewayAPI, binaries.K6} {
		comp, err := binaries.Lookup(name)
		if err != nil {
			return nil, err
		}
		out = append(out, comp)
	}
	return out, nil
}

// gatewayBinaries returns the binaries the tools image carries for the split: none unless the
// cluster has it (ensureDependencies built them).
func (c *creator) gatewayBinaries() []string {
	if !c.gatewayAPI {
		return nil
	}
	return []string{c.bin(binaries.K6Binary), c.bin(binaries.TraefikBinary)}
}

// installGatewayAPI installs the Gateway API CRDs on a cluster with the split; the run deploys
// Traefik and the routes itself.
func (c *creator) installGatewayAPI(ctx context.Context) error {
	if !c.gatewayAPI {
		return nil
	}
	crds := c.bin(binaries.GatewayAPICRDs)
	if err := c.kubectl(ctx, nil, "apply", "--server-side", "--force-conflicts", "-f", crds); err != nil {
		return fmt.Errorf("install Gateway API %s CRDs: %w", binaries.GatewayAPIVersion, err)
	}
	if err := c.kubectl(ctx, nil, "wait", "--for=condition=Established", "--timeout=60s", "-f", crds); err != nil {
		return fmt.Errorf("wait for Gateway API CRDs: %w", err)
	}
	c.spec.GatewayAPI = true
	return c.layout.writeSpec(c.spec)
}

// kubectl runs the cluster's kubectl against it, stdin (may be nil) as its input.
func (c *creator) kubectl(ctx context.Context, stdin io.Reader, args ...string) error {
	k := datapath.Kubectl{Bin: c.kube("kubectl"), Kubeconfig: c.layout.Kubeconfig(c.spec.Name),
		Cache: filepath.Join(c.layout.Dir(c.spec.Name), "kubectl-cache")}
	return k.Run(ctx, stdin, args...)
}
