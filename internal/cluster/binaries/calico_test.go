package binaries

import (
	"slices"
	"strings"
	"testing"
)

func TestCalicoComponent(t *testing.T) {
	c, err := Lookup(Calico)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{CalicoNodeBinary, CalicoCNIBinary, CalicoIPAMBinary, CalicoCRDs}
	if !slices.Equal(c.Binaries, want) || c.recipe.name != calicoRecipe().name {
		t.Errorf("binaries %v recipe %s", c.Binaries, c.recipe.name)
	}
	// The API module the replace points at is part of the recipe: changing it rebuilds.
	if !slices.Contains(c.packages, calicoAPIModule+"@"+calicoAPIVersion) {
		t.Errorf("recipe lacks the API module: %v", c.packages)
	}
	// calico-node and the plugin report the release, as `calico-node -v` shows it.
	for _, v := range []string{"buildinfo.GitVersion=" + CalicoVersion, "startup.VERSION=" + CalicoVersion, "main.VERSION=" + CalicoVersion} {
		if !strings.Contains(c.ldflags, v) {
			t.Errorf("ldflags %q lack %s", c.ldflags, v)
		}
	}
	if c.verify.binary != CalicoNodeBinary || c.verify.want != CalicoVersion {
		t.Errorf("verify %+v", c.verify)
	}
	for _, b := range []string{CalicoNodeBinary, CalicoCRDs} {
		got, err := Providing([]string{b})
		if err != nil || len(got) != 1 || got[0].Name != Calico {
			t.Errorf("%s is built by %v (%v)", b, got, err)
		}
	}
}
