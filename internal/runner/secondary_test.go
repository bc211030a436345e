package runner

import (
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/suite"
)

// TestOfferSecondary: a target's secondary paths take its provider's network as
// namespace/name, a name alone in the run's namespace; a run that makes its namespace anew
// cannot hold one there, and a provider without a network says why, naming the paths.
func TestOfferSecondary(t *testing.T) {
	r := &run{opts: Options{Suite: suite.Suite{Paths: []string{suite.CrossNode, suite.Secondary, suite.SecondarySameNode}}}}
	tg := &target{namespace: "bench"}
	if err := r.offerSecondary(tg, SecondaryOffer{Network: "mv"}); err != nil || tg.secondary != "bench/mv" {
		t.Errorf("a name in the run's namespace: %q, %v", tg.secondary, err)
	}
	tg = &target{namespace: "cnibench-x", ownNamespace: true}
	if err := r.offerSecondary(tg, SecondaryOffer{Network: "default/mv"}); err != nil || tg.secondary != "default/mv" {
		t.Errorf("a namespaced name: %q, %v", tg.secondary, err)
	}
	err := r.offerSecondary(&target{namespace: "cnibench-x", ownNamespace: true}, SecondaryOffer{Network: "mv"})
	if err == nil || !strings.Contains(err.Error(), `secondaryNetwork: "mv": a name alone is a NetworkAttachmentDefinition of the run's namespace, which this run makes anew`) {
		t.Errorf("a name alone in a namespace of the run's own: %v", err)
	}
	err = r.offerSecondary(&target{namespace: "bench"}, SecondaryOffer{Why: "none here"})
	if err == nil || err.Error() != "path secondary, secondary-same-node: none here" {
		t.Errorf("no network: %v", err)
	}
	r.opts.Suite.Paths = []string{suite.CrossNode}
	tg = &target{namespace: "bench"}
	if err := r.offerSecondary(tg, SecondaryOffer{Network: "mv"}); err != nil || tg.secondary != "" {
		t.Errorf("a run without secondary paths attaches %q, %v", tg.secondary, err)
	}
}
