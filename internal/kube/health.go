package kube

import (
	"context"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Down says what of the cluster is down after a sample failed: the API server itself (then
// controlPlane is true and nothing more can be done there), or nodes that are no longer Ready
// among those given (the nodes a run placed pods on, Ready then). The API server gets 15 s to
// answer /readyz again, so a blip is not taken for a loss. A kubelet that just died still
// shows Ready for the node-monitor grace period (40 s by default): a remote cluster's node
// losses are seen late, where a local cluster's provider checks its processes instead.
func (c *Client) Down(ctx context.Context, nodes []string) (down []string, controlPlane bool) {
	var lastErr error
	ready := func(ctx context.Context) (bool, error) {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, lastErr = c.CS.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(rctx)
		return lastErr == nil, nil
	}
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 15*time.Second, true, ready); err != nil {
		if lastErr == nil {
			lastErr = err
		}
		return []string{"the API server at " + c.Server + " (" + lastErr.Error() + ")"}, true
	}
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	list, err := c.CS.CoreV1().Nodes().List(lctx, metav1.ListOptions{})
	if err != nil {
		return nil, false
	}
	for _, n := range list.Items {
		if slices.Contains(nodes, n.Name) && !NodeReady(n) {
			down = append(down, "node "+n.Name+" (not Ready)")
		}
	}
	return down, false
}
