package local

import (
	"context"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/cluster/binaries"
)

// TestRuntimeFactsFromTheHandlerTable checks that a run's fingerprint of a RuntimeClass comes
// from the cluster's handler table: the default class is runc, crun and gVisor carry their
// notes, and a host runtime's version is read from the binary itself.
func TestRuntimeFactsFromTheHandlerTable(t *testing.T) {
	ctx := context.Background()
	empty := binaries.Cache{Dir: t.TempDir()} // nothing built: versions of cached binaries are absent
	runc := localRuntimeFacts(ctx, "", empty)
	if runc["oci_runtime"] != "runc" || !strings.Contains(runc["oci_runtime_version"], "runc") {
		t.Errorf("default class: %v, want runc with its version", runc)
	}
	if crun := localRuntimeFacts(ctx, "crun", empty); !strings.Contains(crun["oci_runtime_note"], "mount namespace") || crun["oci_runtime_version"] == "" {
		t.Errorf("crun: %v, want its note and version", crun)
	}
	if runsc := localRuntimeFacts(ctx, "runsc", empty); runsc["gvisor_platform"] != "systrap" || runsc["oci_runtime_version"] != "" {
		t.Errorf("runsc with nothing built: %v, want its platform and no version", runsc)
	}
	if other := localRuntimeFacts(ctx, "kata", empty); other["oci_runtime"] != "kata" || len(other) != 1 {
		t.Errorf("a class outside the table: %v, want its name alone", other)
	}
}
