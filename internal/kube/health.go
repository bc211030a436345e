package kube

import (
	"context"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Down names what of the cluster the API says is down after a sample failed: the API server
// itself (then controlPlane is true and nothing more can be done there), or nodes that are not
// Ready among those given (the nodes a run placed pods on: they were Ready then). A kubelet that just died still shows Ready for the node-monitor grace period (40 s by
// default), so a remote cluster's losses are seen late; a local cluster's provider checks its
// processes instead.
func (c *Client) Down(ctx context.Context, nodes []string) (down []string, controlPlane bool) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := c.CS.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err != nil {
		return []string{"the API server at " + c.Server + " (" + err.Error() + ")"}, true
	}
	list, err := c.CS.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
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
