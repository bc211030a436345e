package runner

import (
	"context"
	"maps"
	"strings"

	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/suite"
)

// nodeProbeKey names what a node probe's facts hold for: a cluster's nodes, in a family.
func nodeProbeKey(t suite.Target, p kube.Placement) string {
	return strings.Join([]string{clusterKey(t), t.Family, p.NodeA, p.NodeB}, " ")
}

// planNodeProbe decides, before the target's pods are deployed, whether they include the
// node probe (spec.NodeProbe): not when it is off, when an earlier target of the cluster read
// these nodes already, or when a namespace the run was given refuses host-network pods. The
// reason it is not run goes into the fingerprint, so a missing node setting is never silent.
func (r *run) planNodeProbe(ctx context.Context, tg *target, t suite.Target, spec *kube.FixtureSpec, known map[string]string) {
	switch {
	case r.opts.NoNodeProbe:
		known["node_probe"] = "off (--no-node-probe)"
		return
	case r.nodeFacts[nodeProbeKey(t, spec.Placement)] != nil:
		return
	case !tg.ownNamespace && !spec.NeedsHostNetwork():
		// With host-network pods of its own, the run's dry run admitted them already.
		if err := tg.client.CheckNodeProbe(ctx, *spec, spec.Placement.NodeA); err != nil {
			known["node_probe"] = "not run: " + err.Error()
			r.progress("target %s: the nodes' own settings go unrecorded: %v", tg.name, err)
			return
		}
	}
	spec.NodeProbe = true
}

// startNodeProbe starts reading the nodes' settings when the target's pods include the
// probe (planNodeProbe), before anything of the run changes them (a profile's offloads), and
// returns what waits for the read and adds its facts to known: those read now, else those an
// earlier target of the cluster read. The read overlaps the wait for the pods' memory, which
// times nothing. A probe that fails costs the run nothing but its facts, and says so in the
// fingerprint.
func (r *run) startNodeProbe(ctx context.Context, tg *target, t suite.Target, known map[string]string) func() {
	key := nodeProbeKey(t, tg.fixture.Spec.Placement)
	if !tg.fixture.Spec.NodeProbe {
		return func() { maps.Copy(known, r.nodeFacts[key]) }
	}
	var facts map[string]string
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		facts, err = tg.client.ProbeNodes(ctx, tg.fixture)
	}()
	return func() {
		<-done
		if err != nil {
			facts["node_probe"] = "failed: " + err.Error()
			r.progress("target %s: %v", tg.name, err)
		} else {
			r.progress("target %s: read the network settings of its nodes (%d facts)", tg.name, len(facts))
		}
		if r.nodeFacts == nil {
			r.nodeFacts = map[string]map[string]string{}
		}
		r.nodeFacts[key] = facts
		maps.Copy(known, facts)
	}
}
