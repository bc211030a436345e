package binaries

import (
	"os"
	"slices"
	"strings"
	"testing"
)

const sampleK8sGoMod = `// This is a generated file. Do not edit directly.

module k8s.io/kubernetes

go 1.24.0

godebug default=go1.24

require (
	k8s.io/api v0.0.0
	k8s.io/client-go v0.0.0
)

replace (
	k8s.io/api => ./staging/src/k8s.io/api
	k8s.io/apimachinery => ./staging/src/k8s.io/apimachinery // trailing comment
	k8s.io/client-go v0.0.0 => ./staging/src/k8s.io/client-go
	github.com/example/fork => github.com/example/fork v1.0.0
)

replace k8s.io/kms => ./staging/src/k8s.io/kms
`

func TestParseStagingModules(t *testing.T) {
	got, err := parseStagingModules(sampleK8sGoMod)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"k8s.io/api", "k8s.io/apimachinery", "k8s.io/client-go", "k8s.io/kms"}
	if !slices.Equal(got, want) {
		t.Errorf("parseStagingModules = %v, want %v", got, want)
	}
	if _, err := parseStagingModules("module x\n\ngo 1.24\n"); err == nil {
		t.Error("go.mod without staging replaces accepted")
	}
}

// TestParseRealK8sGoMod checks the parser against the real go.mod of each release whose go.mod
// the module cache has; the wrapper needs every staging module (31 in v1.34.2, 33 in v1.37.2).
func TestParseRealK8sGoMod(t *testing.T) {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skip(err)
	}
	dir := home + "/go/pkg/mod"
	if gm := os.Getenv("GOMODCACHE"); gm != "" {
		dir = gm
	}
	for version, want := range map[string]int{"v1.34.2": 31, "v1.37.2": 33} {
		b, err := os.ReadFile(dir + "/cache/download/k8s.io/kubernetes/@v/" + version + ".mod")
		if err != nil {
			t.Logf("kubernetes %s go.mod not in the module cache: %v", version, err)
			continue
		}
		mods, err := parseStagingModules(string(b))
		if err != nil {
			t.Fatal(err)
		}
		if len(mods) != want {
			t.Errorf("%s: got %d staging modules, want %d: %v", version, len(mods), want, mods)
		}
	}
}

func TestStagingVersion(t *testing.T) {
	for in, want := range map[string]string{"v1.34.2": "v0.34.2", "v1.31.0": "v0.31.0"} {
		got, err := stagingVersion(in)
		if err != nil || got != want {
			t.Errorf("stagingVersion(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"1.34.2", "v2.0.0", "v1."} {
		if _, err := stagingVersion(bad); err == nil {
			t.Errorf("stagingVersion(%q) accepted", bad)
		}
	}
}

func TestWrapperGoMod(t *testing.T) {
	got, err := wrapperGoMod("v1.34.2", []string{"k8s.io/api", "k8s.io/kms"})
	if err != nil {
		t.Fatal(err)
	}
	want := `module cnibench.local/k8sbuild

go 1.24.0

require k8s.io/kubernetes v1.34.2

replace (
	k8s.io/api => k8s.io/api v0.34.2
	k8s.io/kms => k8s.io/kms v0.34.2
)
`
	if got != want {
		t.Errorf("wrapperGoMod:\n%s\nwant:\n%s", got, want)
	}
}

func TestWrapperToolsGo(t *testing.T) {
	k, err := Lookup(Kubernetes)
	if err != nil {
		t.Fatal(err)
	}
	got := wrapperToolsGo(k.packages)
	if !strings.HasPrefix(got, "//go:build tools\n\npackage tools\n") {
		t.Errorf("tools.go lacks the build tag header:\n%s", got)
	}
	for _, p := range k.packages {
		if !strings.Contains(got, "\t_ \""+p+"\"\n") {
			t.Errorf("tools.go does not import %s", p)
		}
	}
}
