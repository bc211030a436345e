package runner

import (
	"context"
	"os/exec"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/internal/cluster/binaries"
	"github.com/cnibench/cnibench/internal/lab"
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

// localRuntimeFacts records what runs a local cluster's pods of a RuntimeClass: the OCI
// runtime and its version as the binary reports it, and for gVisor its platform.
func localRuntimeFacts(ctx context.Context, runtimeClass string, cache binaries.Cache) map[string]string {
	handler := runtimeClass
	if handler == "" {
		handler = lab.RuntimeRunc
	}
	facts := map[string]string{"oci_runtime": handler}
	bin := handler
	switch handler {
	case lab.RuntimeRunsc:
		bin = cache.Path(binaries.RunscBinary)
		facts["gvisor_platform"] = cluster.GVisorPlatform
	case lab.RuntimeYouki:
		bin = cache.Path(binaries.YoukiBinary)
	case lab.RuntimeCrun:
		facts["oci_runtime_note"] = "Debian crun in a private mount namespace without the cgroup2 mount (hybrid host)"
	}
	if v := firstLine(ctx, bin, "--version"); v != "" {
		facts["oci_runtime_version"] = v
	}
	return facts
}

// firstLine runs a command and returns its first output line, or "" when it fails.
func firstLine(ctx context.Context, name string, args ...string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).Output()
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}
