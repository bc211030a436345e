package cluster

import (
	"context"
	"fmt"
	"strings"

	"github.com/cnibench/cnibench/internal/cluster/binaries"
	"github.com/cnibench/cnibench/internal/lab"
)

// multusComponents are what a cluster with Multus needs built: the thin plugin and the
// NetworkAttachmentDefinition CRD (the secondary network's macvlan and host-local are among
// the CNI plugins every cluster has).
func multusComponents(want bool) ([]binaries.Component, error) {
	if !want {
		return nil, nil
	}
	comp, err := binaries.Lookup(binaries.Multus)
	if err != nil {
		return nil, err
	}
	return []binaries.Component{comp}, nil
}

// secondaryNAD is the secondary network's NetworkAttachmentDefinition. It has no config: Multus
// then reads the node's file of its name, which the datapath's SetupMultus wrote with the
// node's uplink and the node's own address range.
func secondaryNAD() string {
	ns, name, _ := strings.Cut(lab.SecondaryNetwork, "/")
	return fmt.Sprintf("apiVersion: k8s.cni.cncf.io/v1\nkind: NetworkAttachmentDefinition\nmetadata:\n  name: %s\n  namespace: %s\n", name, ns)
}

// installMultus gives a cluster with Multus the NetworkAttachmentDefinition CRD and the
// secondary network's definition. Multus itself was set up with the nodes: every pod,
// CoreDNS's included, already went through it.
func installMultus(ctx context.Context, ac *actionContext) error {
	k, crds := kubectlOf(ac.layout, ac.spec.Name, ac.bins), ac.bins.bin(binaries.MultusCRDs)
	if err := k.Run(ctx, nil, "apply", "--server-side", "-f", crds); err != nil {
		return fmt.Errorf("install Multus %s's CRD: %w", binaries.MultusVersion, err)
	}
	if err := k.Run(ctx, nil, "wait", "--for=condition=Established", "--timeout=60s", "-f", crds); err != nil {
		return fmt.Errorf("wait for Multus' CRD: %w", err)
	}
	if err := k.Run(ctx, strings.NewReader(secondaryNAD()), "apply", "--server-side", "-f", "-"); err != nil {
		return fmt.Errorf("create the secondary network %s: %w", lab.SecondaryNetwork, err)
	}
	return nil
}
