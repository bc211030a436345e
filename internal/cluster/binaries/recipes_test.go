package binaries

import (
	"context"
	"io"
	"strings"
	"testing"
)

// TestEveryComponentHasARecipe catches a component declared without a recipe, which could
// only fail when someone asks for its build, and checks that building one fails naming it.
func TestEveryComponentHasARecipe(t *testing.T) {
	for _, c := range Components() {
		if c.recipe.build == nil || c.recipe.name == "" {
			t.Errorf("component %s %s has no recipe (name %q)", c.Name, c.Version, c.recipe.name)
		}
	}
	err := Cache{Dir: t.TempDir()}.runRecipe(context.Background(), io.Discard, fakeComponent("v1", "x"), t.TempDir(), t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "component fake declares no build recipe") {
		t.Errorf("runRecipe without a recipe = %v", err)
	}
}

// TestRecipeNamesAreStable pins the name each component's recipe puts into its hash. A
// changed name changes the stamp of every cache, which then rebuilds the component (minutes
// each, 45 for a cold CI run of all of them); recipe names must also differ, or a component
// moved to another recipe would keep its stale build.
func TestRecipeNamesAreStable(t *testing.T) {
	want := map[string]string{
		CNIPlugins:   "go-install",
		CoreDNS:      "go-install",
		Containerd:   "module-copy",
		Kubernetes:   "k8s-wrapper",
		Cilium:       "kind-100",
		Flannel:      "kind-101",
		GVisor:       "kind-102",
		CRIO:         "kind-103",
		Youki:        "kind-104",
		Calico:       "kind-105",
		CalicoBPF:    "calico-ebpf",
		GatewayAPI:   "kind-106",
		Traefik:      "module-copy",
		K6:           "go-install",
		Registry:     "go-install",
		Stream:       "cargo-install",
		Multus:       "multus-thin",
		EnvoyGateway: "envoy-gateway",
		Envoy:        "pypi-wheel",
	}
	for _, c := range Components() {
		if w, ok := want[c.Name]; !ok || c.recipe.name != w {
			t.Errorf("%s %s: recipe name %q, want %q", c.Name, c.Version, c.recipe.name, w)
		}
	}
	seen := map[string]bool{}
	for _, r := range []recipe{goInstallRecipe(), k8sWrapperRecipe(), moduleCopyRecipe(), ciliumRecipe(),
		flannelRecipe(), gvisorRecipe(), crioRecipe(), youkiRecipe(), calicoRecipe(), gatewayAPIRecipe(), multusRecipe(),
		envoyGatewayRecipe(), envoyWheelRecipe(), calicoBPFRecipe()} {
		if seen[r.name] {
			t.Errorf("two recipes are named %q", r.name)
		}
		seen[r.name] = true
	}
}

// TestRecipeHashesPinned holds the recipe hashes of two components against the values their
// stamps hold in existing caches, so that a refactoring of how hashes are computed cannot
// rebuild everything unnoticed. A deliberate change of the component (its version, ldflags,
// packages) changes the hash: update the literal then.
func TestRecipeHashesPinned(t *testing.T) {
	for name, want := range map[string]string{
		CNIPlugins: "06a3680c0df81de0", // v1.9.1
		Cilium:     "d5288d1ccb1a5603", // v1.19.7
	} {
		c, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.RecipeHash(); got != want {
			t.Errorf("%s %s: recipe hash %s, want %s", name, c.Version, got, want)
		}
	}
}
