package runner

import (
	"github.com/cnibench/cnibench/internal/suite"
)

// portsPerVariant separates the server ports of the runtimes sharing a cluster: host-network
// servers of two runtimes on one node would otherwise collide. It covers the largest pairs
// level times a handful of server kinds.
const portsPerVariant = 1000

// variantOf returns the target's index among the targets sharing its cluster, and how many
// share it.
func (r *run) variantOf(t suite.Target) (index, shared int) {
	index = -1
	for _, o := range r.opts.Suite.Targets {
		if clusterKey(o) == clusterKey(t) {
			if o.Name == t.Name {
				index = shared
			}
			shared++
		}
	}
	return max(index, 0), shared
}

// clusterKey names the cluster a target measures: the targets of one cluster's runtimes share
// it, and with it their provider.
func clusterKey(t suite.Target) string {
	if t.Local != nil {
		return "local " + t.Local.Name
	}
	return "remote " + t.Kubeconfig + " " + t.Context
}
