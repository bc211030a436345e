package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// summary is the part of the kubelet's /stats/summary that PodMemory reads.
type summary struct {
	Pods []struct {
		PodRef struct{ Name, Namespace string } `json:"podRef"`
		Memory *struct {
			WorkingSetBytes *uint64 `json:"workingSetBytes"`
		} `json:"memory"`
	} `json:"pods"`
}

// PodMemory returns the memory working set of every pod of a namespace on the given nodes, in
// bytes by pod name, as each node's kubelet reports it through the API server's node proxy.
// The kubelet reads the pod's cgroup on the node, so whatever a runtime runs in the pod beside
// the containers (a gVisor sandbox, a VM) counts, which a reading inside the pod cannot see.
func (c *Client) PodMemory(ctx context.Context, namespace string, nodes []string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out := map[string]float64{}
	for _, node := range nodes {
		raw, err := c.CS.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node, "proxy", "stats", "summary").DoRaw(ctx)
		if err != nil {
			return nil, fmt.Errorf("kubelet stats of node %s: %w", node, err)
		}
		var s summary
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("kubelet stats of node %s: %w", node, err)
		}
		for _, p := range s.Pods {
			if p.PodRef.Namespace == namespace && p.Memory != nil && p.Memory.WorkingSetBytes != nil {
				out[p.PodRef.Name] = float64(*p.Memory.WorkingSetBytes)
			}
		}
	}
	return out, nil
}
