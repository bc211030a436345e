package binaries

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/lab"
)

func TestTraefikComponent(t *testing.T) {
	c, err := Lookup(Traefik)
	if err != nil {
		t.Fatal(err)
	}
	if c.Module != "github.com/traefik/traefik/v3" || c.Version != TraefikVersion || c.recipe.name != moduleCopyRecipe().name {
		t.Errorf("module %s version %s recipe %s", c.Module, c.Version, c.recipe.name)
	}
	// The module's replace directives defeat go install: it must build from a module copy.
	if !slices.Equal(c.packages, []string{"./cmd/traefik"}) || !slices.Equal(c.Binaries, []string{TraefikBinary}) {
		t.Errorf("packages %v binaries %v", c.packages, c.Binaries)
	}
	// Without the stamp `traefik version` says "dev".
	for _, v := range []string{"-s -w", " -X github.com/traefik/traefik/v3/pkg/version.Version=" + TraefikVersion,
		" -X github.com/traefik/traefik/v3/pkg/version.Codename=" + traefikCodename} {
		if !strings.Contains(c.ldflags, v) {
			t.Errorf("ldflags %q lack %q", c.ldflags, v)
		}
	}
	if c.verify.binary != TraefikBinary || !slices.Equal(c.verify.args, []string{"version"}) || c.verify.want != TraefikVersion {
		t.Errorf("verify %+v", c.verify)
	}
}

func TestGatewayAPIComponent(t *testing.T) {
	c, err := Lookup(GatewayAPI)
	if err != nil {
		t.Fatal(err)
	}
	if c.Module != "sigs.k8s.io/gateway-api" || c.Version != GatewayAPIVersion || c.recipe.name != gatewayAPIRecipe().name {
		t.Errorf("module %s version %s recipe %s", c.Module, c.Version, c.recipe.name)
	}
	if !slices.Equal(c.Binaries, []string{GatewayAPICRDs}) || c.verify.binary != "" {
		t.Errorf("binaries %v verify %+v", c.Binaries, c.verify)
	}
	// A cluster asks for the files it needs; each comes from its own component.
	got, err := Providing([]string{TraefikBinary, GatewayAPICRDs, K6Binary})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range got {
		names = append(names, g.Name)
	}
	if !slices.Equal(names, []string{Traefik, GatewayAPI, K6}) {
		t.Errorf("Providing = %v", names)
	}
	// Optional: the default setup must not build them.
	base, err := Base(lab.DefaultKubernetesVersion)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range base {
		if b.Name == Traefik || b.Name == GatewayAPI || b.Name == K6 {
			t.Errorf("Base builds %s", b.Name)
		}
	}
}

const (
	fakeCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %s.gateway.networking.k8s.io
spec:
  names:
    kind: %s
`
	fakeVAP = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: safe-upgrades.gateway.networking.k8s.io

---

apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
`
)

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestJoinCRDs(t *testing.T) {
	dir := t.TempDir()
	gateways := strings.ReplaceAll(strings.Replace(fakeCRD, "%s", "gateways", 1), "%s", "Gateway")
	classes := strings.ReplaceAll(strings.Replace(fakeCRD, "%s", "gatewayclasses", 1), "%s", "GatewayClass")
	writeFiles(t, dir, map[string]string{
		"b_gateways.yaml": gateways + "\n\n",
		// A leading separator must not produce an empty document.
		"a_gatewayclasses.yaml": "---\n" + classes,
		"c_vap.yaml":            fakeVAP,
		"kustomization.yml":     "resources: []\n",
		"README.md":             "kind: CustomResourceDefinition\n",
	})
	var out, log bytes.Buffer
	used, err := joinCRDs(dir, &out, &log)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(used, []string{"a_gatewayclasses.yaml", "b_gateways.yaml"}) {
		t.Errorf("used %v", used)
	}
	if want := classes + "---\n" + gateways; out.String() != want {
		t.Errorf("joined:\n%s\nwant:\n%s", out.String(), want)
	}
	if !strings.Contains(log.String(), "left out c_vap.yaml") {
		t.Errorf("log does not name the skipped file: %q", log.String())
	}
}

func TestJoinCRDsRefusesSurprises(t *testing.T) {
	mixed := t.TempDir()
	writeFiles(t, mixed, map[string]string{"x.yaml": fakeCRD + "---\n" + fakeVAP})
	if _, err := joinCRDs(mixed, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "mixes") {
		t.Errorf("a file mixing a CRD and a policy: %v", err)
	}
	none := t.TempDir()
	writeFiles(t, none, map[string]string{"vap.yaml": fakeVAP})
	if _, err := joinCRDs(none, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "no CRD") {
		t.Errorf("a directory without CRDs: %v", err)
	}
}

// TestRealGatewayAPICRDs joins the pinned release's real CRDs (a module download of ~1 MB, no
// build), so a version bump that moves or changes them fails here, in seconds.
func TestRealGatewayAPICRDs(t *testing.T) {
	if _, err := goTool(); err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	comp, err := Lookup(GatewayAPI)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if _, err := modDownload(ctx, io.Discard, t.TempDir(), comp.Module, comp.Version); err != nil {
		t.Skipf("module proxy: %v", err)
	}
	if err := buildGatewayAPI(ctx, io.Discard, comp, t.TempDir(), out); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(out, GatewayAPICRDs))
	if err != nil {
		t.Fatal(err)
	}
	got := string(data)
	// The resources Traefik's Gateway provider watches, at the versions it reads.
	for _, crd := range []string{"gatewayclasses", "gateways", "httproutes", "grpcroutes", "referencegrants", "backendtlspolicies"} {
		if !strings.Contains(got, "\n  name: "+crd+".gateway.networking.k8s.io\n") {
			t.Errorf("no %s CRD", crd)
		}
	}
	kinds := topLevelKinds(data)
	if len(kinds) < 6 || slices.ContainsFunc(kinds, func(k string) bool { return k != "CustomResourceDefinition" }) {
		t.Errorf("kinds %v: want CRDs only", kinds)
	}
	if n := strings.Count(got, "gateway.networking.k8s.io/bundle-version: "+GatewayAPIVersion+"\n"); n != len(kinds) {
		t.Errorf("%d of %d CRDs are of bundle %s", n, len(kinds), GatewayAPIVersion)
	}
	if docs := strings.Count(got, "\n---\n") + 1; docs != len(kinds) {
		t.Errorf("%d documents for %d CRDs", docs, len(kinds))
	}
}
