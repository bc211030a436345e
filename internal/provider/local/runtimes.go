package local

import (
	"cmp"
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
// runtime and its version as the binary reports it, and what the cluster's handler table notes
// of it (gVisor's platform, crun's mount namespace).
func localRuntimeFacts(ctx context.Context, runtimeClass string, cache binaries.Cache) map[string]string {
	handler := cmp.Or(runtimeClass, lab.RuntimeRunc)
	facts, version := map[string]string{"oci_runtime": handler}, []string{handler, "--version"}
	if h, err := cluster.LookupRuntime(handler); err == nil {
		facts, version = h.Fingerprint(), h.VersionCommand(cache)
	}
	if v := firstLine(ctx, version[0], version[1:]...); v != "" {
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
