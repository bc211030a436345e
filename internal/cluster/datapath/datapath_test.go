package datapath

import (
	"slices"
	"testing"

	"github.com/cnibench/cnibench/internal/lab"
)

// TestImplementationsMatchLab holds the implementations to the facts the rest of cnibench
// reads from internal/lab: the same datapaths, and the same ones replacing kube-proxy.
func TestImplementationsMatchLab(t *testing.T) {
	if got, want := Names(), lab.DatapathNames(); !slices.Equal(got, want) {
		t.Fatalf("implemented datapaths %v, lab lists %v", got, want)
	}
	for _, d := range lab.Datapaths() {
		impl, err := Lookup(d.Name)
		if err != nil {
			t.Fatal(err)
		}
		if replacesKubeProxy(impl) != d.ReplacesKubeProxy {
			t.Errorf("%s: implementation replaces kube-proxy %v, lab says %v", d.Name, replacesKubeProxy(impl), d.ReplacesKubeProxy)
		}
		if impl.Name() != d.Name {
			t.Errorf("%s: implementation named %s", d.Name, impl.Name())
		}
	}
}
