package binaries

import (
	"slices"
	"testing"
)

func TestK6Component(t *testing.T) {
	c, err := Lookup(K6)
	if err != nil {
		t.Fatal(err)
	}
	if c.Module != "go.k6.io/k6" || c.Version != K6Version || c.recipe.name != goInstallRecipe().name {
		t.Errorf("module %s version %s recipe %s", c.Module, c.Version, c.recipe.name)
	}
	// The root package is the command; go install names the binary after the module's last
	// element.
	if !slices.Equal(c.packages, []string{"go.k6.io/k6"}) || !slices.Equal(c.Binaries, []string{K6Binary}) {
		t.Errorf("packages %v binaries %v", c.packages, c.Binaries)
	}
	if c.ldflags != "-s -w" {
		t.Errorf("ldflags %q", c.ldflags)
	}
	if c.verify.binary != K6Binary || !slices.Equal(c.verify.args, []string{"version"}) || c.verify.want != K6Version {
		t.Errorf("verify %+v", c.verify)
	}
}
