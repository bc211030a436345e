package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/internal/kube"
)

// loss is what a target's provider found down after one of its samples failed. Nothing of a
// cluster is restarted under a run, so a loss lasts: the samples that need it fail at once,
// naming it, instead of being tried again.
type loss struct {
	// down says what is gone, in phrases: "node2-kubelet, node1-containerd not running".
	down []string
	// controlPlane: the API server (or its store) is gone, so nothing more can be measured in
	// the target or removed from it through the API.
	controlPlane bool
}

func (l loss) any() bool { return len(l.down) > 0 }

func (l loss) String() string { return strings.Join(l.down, "; ") }

// explain puts the loss in front of a sample's own error, which only says what the tool saw.
func (l loss) explain(sampleErr string) string {
	return fmt.Sprintf("lost %s: %s", l, sampleErr)
}

// lost names the local cluster's daemons whose processes are gone: known at once, where the
// API would notice a dead kubelet only after the node-monitor grace period.
func (p *localProvider) lost(context.Context, *kube.Client, []string) loss {
	spec, err := p.r.opts.Layout.ReadSpec(p.spec.Name)
	if err != nil {
		return loss{}
	}
	dead := cluster.NotRunning(p.r.opts.Layout, spec)
	if len(dead) == 0 {
		return loss{}
	}
	return loss{down: []string{strings.Join(dead, ", ") + " not running"}, controlPlane: slices.ContainsFunc(dead, cluster.ControlPlane)}
}

// lost asks a remote cluster's API what is down among the target's nodes.
func (*remoteProvider) lost(ctx context.Context, client *kube.Client, nodes []string) loss {
	down, cp := client.Down(ctx, nodes)
	return loss{down: down, controlPlane: cp}
}

// losses ends a run that lost components with an error naming them, so it is stored as
// partial: its finished samples stand, the ones that needed what was lost failed.
func (r *run) losses() error {
	var errs []error
	for _, tg := range r.targets {
		if tg.lost.any() {
			errs = append(errs, fmt.Errorf("target %s lost %s", tg.name, tg.lost))
		}
	}
	return errors.Join(errs...)
}
