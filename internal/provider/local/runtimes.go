package local

import (
	"context"
	"os/exec"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/internal/cluster/binaries"
	"github.com/cnibench/cnibench/internal/lab"
)

// RuntimeFacts records what runs the cluster's pods of a RuntimeClass: the OCI runtime and
// its version as the binary reports it, and for gVisor its platform.
func (p *Provider) RuntimeFacts(ctx context.Context, runtimeClass string) map[string]string {
	return localRuntimeFacts(ctx, runtimeClass, p.Cache)
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
