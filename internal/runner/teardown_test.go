package runner

import (
	"testing"

	"github.com/cnibench/cnibench/internal/suite"
)

// TestTeardownSharedRemoteProvider tears down two targets of one remote cluster (two runtimes
// of a kubeconfig context): their shared provider is released once, and comparing providers
// must not panic on a target whose fields are not comparable.
func TestTeardownSharedRemoteProvider(t *testing.T) {
	r := &run{providers: map[string]provider{}}
	tgt := suite.Target{Name: "remote", Kubeconfig: "/nonexistent", Runtimes: []string{"runc", "crun"}}
	for _, rt := range tgt.Runtimes {
		x := tgt
		x.Runtime = rt
		r.targets = append(r.targets, &target{name: "remote." + rt, provider: r.providerFor(x)})
	}
	if err := r.teardown(); err != nil {
		t.Fatal(err)
	}
}
