package kube

import (
	"context"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodesDown names the nodes among those given (the nodes a run placed pods on, Ready then)
// that are no longer Ready. A kubelet that just died still shows Ready for the node-monitor
// grace period (40 s by default): a remote cluster's node losses are seen late, where a local
// cluster's provider checks its processes instead. An API server that does not answer shows
// nothing here: whoever asks waits for it (AwaitAPI) before calling it lost.
func (c *Client) NodesDown(ctx context.Context, nodes []string) []string {
	lctx, cancel := context.WithTimeout(ctx, readyzTimeout)
	defer cancel()
	list, err := c.CS.CoreV1().Nodes().List(lctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	var down []string
	for _, n := range list.Items {
		if slices.Contains(nodes, n.Name) && !NodeReady(n) {
			down = append(down, "node "+n.Name+" (not Ready)")
		}
	}
	return down
}
