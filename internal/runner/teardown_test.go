package runner

import (
	"testing"

	"github.com/cnibench/cnibench/internal/suite"
)

// TestTeardownSharedRemoteProvider tears down two targets of one remote cluster (two runtimes
// of a kubeconfig context): they share one provider, which compares as the same one (a
// provider holding its target by value panicked when compared: the target is not
// comparable), and teardown releases it.
func TestTeardownSharedRemoteProvider(t *testing.T) {
	r := &run{providers: map[string]Provider{}}
	tgt := suite.Target{Name: "remote", Kubeconfig: "/nonexistent", Runtimes: []string{"runc", "crun"}}
	for _, rt := range tgt.Runtimes {
		x := tgt
		x.Runtime = rt
		r.targets = append(r.targets, &target{name: "remote." + rt, provider: r.providerFor(x)})
	}
	if len(r.providers) != 1 || r.targets[0].provider != r.targets[1].provider {
		t.Errorf("%d providers for one remote cluster's two runtimes, want one shared", len(r.providers))
	}
	if err := r.teardown(); err != nil {
		t.Fatal(err)
	}
}
