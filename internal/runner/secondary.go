package runner

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/setting"
	"github.com/cnibench/cnibench/internal/suite"
)

// secondaryPaths lists the run's paths over a secondary network.
func secondaryPaths(paths []string) []string {
	return slices.DeleteFunc(slices.Clone(paths), func(name string) bool {
		p, _ := suite.PathOf(name)
		return !p.NeedsFeature(suite.NeedsSecondary)
	})
}

// offerSecondary takes from the target's provider the network attachment its secondary paths
// take, as namespace/name, or says why the target has none.
func (r *run) offerSecondary(tg *target, offer SecondaryOffer) error {
	paths := secondaryPaths(r.opts.Suite.Paths)
	if len(paths) == 0 {
		return nil
	}
	if offer.Network == "" {
		return fmt.Errorf("path %s: %s", strings.Join(paths, ", "), offer.Why)
	}
	if !strings.Contains(offer.Network, "/") && tg.ownNamespace {
		return &setting.Error{Name: "secondaryNetwork", Value: strconv.Quote(offer.Network),
			Want: "a name alone is a NetworkAttachmentDefinition of the run's namespace, which this run makes anew: expected NAMESPACE/NAME, or --namespace NS where it is"}
	}
	tg.secondary = kube.QualifyNetwork(offer.Network, tg.namespace)
	return nil
}

// checkSecondary is the preflight of the secondary paths, before any pod is made: Multus, the
// NetworkAttachmentDefinition, its namespace and its IPAM (kube.CheckNetworkAttachment), the
// RBAC to read it having been checked with the run's other permissions.
func (r *run) checkSecondary(ctx context.Context, tg *target, known map[string]string) error {
	if tg.secondary == "" {
		return nil
	}
	a, err := tg.client.CheckNetworkAttachment(ctx, tg.secondary, tg.namespace)
	if err != nil {
		return err
	}
	known["secondary_network"] = a.String()
	return nil
}

// checkSecondaryAddresses checks, once the pods are up, that each got an address of its own on
// the secondary network, and records pair 0's.
func checkSecondaryAddresses(tg *target, known map[string]string) error {
	if tg.secondary == "" {
		return nil
	}
	addrs, err := tg.fixture.CheckSecondary()
	if err != nil {
		return err
	}
	known["secondary_addresses"] = addrs
	return nil
}
