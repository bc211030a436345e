package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cnibench/cnibench/internal/kube"
)

// Loss is what a target's provider found down after one of its samples failed. Nothing of a
// cluster is restarted under a run, so a loss lasts: the samples that need it fail at once,
// naming it, instead of being tried again.
type Loss struct {
	// Down says what is gone, in phrases: "node2-kubelet, node1-containerd not running".
	Down []string
	// ControlPlane: the API server (or its store) is gone, so nothing more can be measured in
	// the target or removed from it through the API.
	ControlPlane bool
}

func (l Loss) any() bool { return len(l.Down) > 0 }

func (l Loss) String() string { return strings.Join(l.Down, "; ") }

// explain puts the loss in front of a sample's own error, which only says what the tool saw.
func (l Loss) explain(sampleErr string) string {
	return fmt.Sprintf("lost %s: %s", l, sampleErr)
}

// Lost asks a remote cluster's API which of the target's nodes are down. Of its API server it
// knows only that it does not answer, which may pass: the run waits for it (recover) before
// taking its control plane for lost.
func (*remoteProvider) Lost(ctx context.Context, client *kube.Client, nodes []string) Loss {
	return Loss{Down: client.NodesDown(ctx, nodes)}
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
