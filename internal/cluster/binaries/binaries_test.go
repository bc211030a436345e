package binaries

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/lab"
)

// fakeComponent has no recipe, so any attempt to build it fails immediately
// instead of running go.
func fakeComponent(version string, bins ...string) Component {
	return Component{
		Name:      "fake",
		Module:    "example.invalid/fake",
		Version:   version,
		Binaries:  bins,
		ColdBuild: time.Second,
	}
}

func writeExec(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestDefaultDir(t *testing.T) {
	t.Setenv(EnvCacheDir, "")
	if got := DefaultDir(); got != DefaultCacheDir {
		t.Errorf("DefaultDir() = %q, want %q", got, DefaultCacheDir)
	}
	t.Setenv(EnvCacheDir, "/tmp/x")
	if got := DefaultDir(); got != "/tmp/x" {
		t.Errorf("DefaultDir() with env = %q", got)
	}
	if got := (Cache{Dir: "/c"}).Path("kubelet"); got != "/c/bin/kubelet" {
		t.Errorf("Path = %q", got)
	}
}

func TestComponentsTable(t *testing.T) {
	want := map[string][]string{
		Kubernetes:   {"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy", "kubectl"},
		CoreDNS:      {"coredns"},
		CNIPlugins:   {"bridge", "ptp", "macvlan", "loopback", "host-local", "bandwidth", "portmap", "firewall", "tuning"},
		Containerd:   {"containerd", "containerd-shim-runc-v2", "ctr"},
		Flannel:      {"flanneld", "flannel"},
		Cilium:       {"cilium-agent", "cilium-cni", "cilium-dbg", "cilium-operator-generic", "cilium-bpf.tar.gz"},
		CRIO:         {"crio", "pinns"},
		GVisor:       {"runsc", "containerd-shim-runsc-v1"},
		Youki:        {"youki"},
		Calico:       {"calico-node", "calico", "calico-ipam", "calico-crds.yaml"},
		CalicoBPF:    {"calico-bpf.tar.gz"},
		GatewayAPI:   {"gateway-api-crds.yaml"},
		Traefik:      {"traefik"},
		K6:           {"k6"},
		Registry:     {"registry"},
		Stream:       {"stream"},
		Multus:       {"multus", "multus-crds.yaml"},
		EnvoyGateway: {"envoy-gateway", "envoy-gateway-crds.yaml", "envoy-gateway.yaml"},
		Envoy:        {"envoy"},
	}
	seen := map[string]bool{}
	for _, c := range Components() {
		if !slices.Equal(c.Binaries, want[c.Name]) {
			t.Errorf("%s binaries = %v, want %v", c.Name, c.Binaries, want[c.Name])
		}
		for _, b := range c.Binaries {
			path := Cache{Dir: "/c"}.BinaryPath(c, b)
			if seen[path] {
				t.Errorf("binary %s appears in two components", path)
			}
			seen[path] = true
		}
		if c.verify.binary != "" && !slices.Contains(c.Binaries, c.verify.binary) {
			t.Errorf("%s verifies %s, which it does not build", c.Name, c.verify.binary)
		}
	}
	if want := 41 + 6*len(lab.KubernetesVersions()); len(seen) != want {
		t.Errorf("got %d binaries, want %d", len(seen), want)
	}
	if _, err := Lookup("nope"); err == nil {
		t.Error("Lookup(nope) succeeded")
	}
	k, err := KubernetesComponent("v1.34.2")
	if err != nil {
		t.Fatal(err)
	}
	wantLD := "-s -w -X k8s.io/component-base/version.gitVersion=v1.34.2 -X k8s.io/component-base/version.gitMajor=1 " +
		"-X k8s.io/component-base/version.gitMinor=34 -X k8s.io/client-go/pkg/version.gitVersion=v1.34.2"
	if k.ldflags != wantLD {
		t.Errorf("kubernetes ldflags = %q\nwant %q", k.ldflags, wantLD)
	}
}

func TestKubernetesReleasesSideBySide(t *testing.T) {
	c := Cache{Dir: "/c"}
	def, err := Lookup(Kubernetes)
	if err != nil {
		t.Fatal(err)
	}
	if def.Version != lab.DefaultKubernetesVersion || lab.KubernetesVersions()[0] != lab.DefaultKubernetesVersion {
		t.Errorf("Lookup(kubernetes) = %s, versions %v; want the default %s first", def.Version, lab.KubernetesVersions(), lab.DefaultKubernetesVersion)
	}
	old, err := KubernetesComponent("v1.34.2")
	if err != nil {
		t.Fatal(err)
	}
	if c.BinaryPath(def, "kubelet") == c.BinaryPath(old, "kubelet") || c.stampPath(def.key()) == c.stampPath(old.key()) {
		t.Errorf("two releases share a path: %s, stamp %s", c.BinaryPath(def, "kubelet"), c.stampPath(def.key()))
	}
	if got := c.BinaryPath(old, "kubelet"); got != "/c/bin/kubernetes-v1.34.2/kubelet" {
		t.Errorf("1.34 kubelet at %s", got)
	}
	if _, err := KubernetesComponent("v1.99.0"); err == nil || !strings.Contains(err.Error(), `kubernetes: "v1.99.0": expected one of`) {
		t.Errorf("unknown release: err = %v, want one naming the kubernetes setting", err)
	}
	base, err := Base("v1.34.2")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, b := range base {
		names = append(names, b.Name+"@"+b.Version)
	}
	if want := []string{CNIPlugins + "@" + CNIPluginsVersion, CoreDNS + "@" + CoreDNSVersion, Containerd + "@" + ContainerdVersion, Stream + "@" + StreamVersion, "kubernetes@v1.34.2"}; !slices.Equal(names, want) {
		t.Errorf("Base(v1.34.2) = %v, want %v", names, want)
	}
	prov, err := Providing([]string{"flanneld", "flannel", "cilium-dbg"})
	if err != nil || len(prov) != 2 || prov[0].Name != Flannel || prov[1].Name != Cilium {
		t.Errorf("Providing = %v, %v; want flannel then cilium", prov, err)
	}
	if _, err := Providing([]string{"kubelet"}); err == nil {
		t.Error("Providing(kubelet) succeeded: a versioned binary must come from Base")
	}
}

func TestRecipeHashChanges(t *testing.T) {
	a := fakeComponent("v1", "x")
	b := fakeComponent("v1", "x")
	if a.RecipeHash() != b.RecipeHash() {
		t.Fatal("hash not deterministic")
	}
	b.tags = []string{"no_btrfs"}
	if a.RecipeHash() == b.RecipeHash() {
		t.Error("tags do not change the hash")
	}
	b = fakeComponent("v2", "x")
	if a.RecipeHash() == b.RecipeHash() {
		t.Error("version does not change the hash")
	}
}

func TestMissingAndCheck(t *testing.T) {
	c := Cache{Dir: t.TempDir()}
	comp := fakeComponent("v1", "alpha", "beta")

	if got := c.Missing(comp); !slices.Equal(got, []string{"alpha", "beta"}) {
		t.Errorf("empty cache: Missing = %v", got)
	}
	err := c.Check(comp)
	if err == nil || !strings.Contains(err.Error(), "alpha, beta") || !strings.Contains(err.Error(), "scripts/setup.sh") {
		t.Errorf("Check = %v", err)
	}

	// Binaries without a stamp are an interrupted build: all still missing.
	writeExec(t, c.Path("alpha"))
	writeExec(t, c.Path("beta"))
	if got := c.Missing(comp); len(got) != 2 {
		t.Errorf("no stamp: Missing = %v", got)
	}
	if err := c.writeStamp(comp); err != nil {
		t.Fatal(err)
	}
	if got := c.Missing(comp); len(got) != 0 {
		t.Errorf("complete: Missing = %v", got)
	}
	if err := c.Check(comp); err != nil {
		t.Errorf("complete: Check = %v", err)
	}

	// A lost binary is reported alone.
	if err := os.Remove(c.Path("beta")); err != nil {
		t.Fatal(err)
	}
	if got := c.Missing(comp); !slices.Equal(got, []string{"beta"}) {
		t.Errorf("lost beta: Missing = %v", got)
	}
	writeExec(t, c.Path("beta"))

	// A non-executable file does not count.
	if err := os.Chmod(c.Path("beta"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := c.Missing(comp); !slices.Equal(got, []string{"beta"}) {
		t.Errorf("non-executable beta: Missing = %v", got)
	}
	if err := os.Chmod(c.Path("beta"), 0o755); err != nil {
		t.Fatal(err)
	}

	// A version bump invalidates the whole component.
	newer := fakeComponent("v2", "alpha", "beta")
	if got := c.Missing(newer); len(got) != 2 {
		t.Errorf("version bump: Missing = %v", got)
	}
	if err := c.Check(newer); err == nil || !strings.Contains(err.Error(), "fake v2") {
		t.Errorf("version bump: Check = %v", err)
	}
}

func TestEnsureSkipsCurrent(t *testing.T) {
	c := Cache{Dir: t.TempDir()}
	comp := fakeComponent("v1", "alpha")
	writeExec(t, c.Path("alpha"))
	if err := c.writeStamp(comp); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := c.Ensure(context.Background(), &out, comp); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	if !strings.Contains(out.String(), "fake v1: up to date") {
		t.Errorf("output = %q", out.String())
	}
}

func TestEnsureFailureLeavesNothing(t *testing.T) {
	c := Cache{Dir: t.TempDir()}
	comp := fakeComponent("v1", "alpha")
	var out bytes.Buffer
	err := c.Ensure(context.Background(), &out, comp)
	if err == nil {
		t.Fatal("Ensure of an unbuildable component succeeded")
	}
	t.Logf("error: %v", err)
	if !strings.Contains(err.Error(), "build fake v1") || !strings.Contains(err.Error(), "last lines of") {
		t.Errorf("error = %v", err)
	}
	if !strings.Contains(out.String(), "building fake v1 (1 binary, ~1 s cold)") {
		t.Errorf("output = %q", out.String())
	}
	if _, err := os.Stat(c.Path("alpha")); err == nil {
		t.Error("failed build installed a binary")
	}
	if _, err := os.Stat(c.stampPath("fake")); err == nil {
		t.Error("failed build wrote a stamp")
	}
	if ents, _ := os.ReadDir(filepath.Join(c.Dir, "tmp")); len(ents) != 0 {
		t.Errorf("scratch dirs left behind: %v", ents)
	}
}

func TestEnsureCancelled(t *testing.T) {
	c := Cache{Dir: t.TempDir()}
	ctx, cancel := context.WithCancel(context.Background())
	// Hold the lock so Ensure has to wait, then cancel the wait.
	unlock, err := func() (func(), error) {
		if err := os.MkdirAll(c.Dir, 0o755); err != nil {
			return nil, err
		}
		return c.lock(context.Background(), &bytes.Buffer{})
	}()
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	go func() {
		time.Sleep(200 * time.Millisecond)
		cancel()
	}()
	var out bytes.Buffer
	err = c.Ensure(ctx, &out, fakeComponent("v1", "alpha"))
	if err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Errorf("Ensure with held lock = %v", err)
	}
	if !strings.Contains(out.String(), "waiting for another build") {
		t.Errorf("output = %q", out.String())
	}
}

func TestProxyRefusal(t *testing.T) {
	text := "go: k8s.io/kubernetes@v1.32.1 requires\n\tk8s.io/kms@v0.32.1: reading https://proxy.golang.org/k8s.io/kms/@v/v0.32.1.mod: 403 Forbidden\n\tserver response: This module version is not available."
	mv, ok := proxyRefusal(text)
	if !ok || mv != "k8s.io/kms@v0.32.1" {
		t.Errorf("proxyRefusal = %q, %v", mv, ok)
	}
	if _, ok := proxyRefusal("go: downloading k8s.io/api v0.34.2\n# build failed"); ok {
		t.Error("proxyRefusal matched a log without a refusal")
	}
}

// TestRefusedModuleNamesVersion runs go against a local fake proxy that
// refuses everything the way proxy.golang.org refuses unavailable versions.
func TestRefusedModuleNamesVersion(t *testing.T) {
	if _, err := goTool(); err != nil {
		t.Skip(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "This module version is not available.", http.StatusForbidden)
	}))
	defer srv.Close()
	t.Setenv("GOPROXY", srv.URL)
	t.Setenv("GONOPROXY", "")
	t.Setenv("GOPRIVATE", "")
	t.Setenv("GONOSUMDB", "")
	c := Cache{Dir: t.TempDir()}
	comp := Component{
		Name: "refused", Module: "example.invalid/refused", Version: "v1.2.3",
		Binaries: []string{"refused"}, recipe: moduleCopyRecipe(), packages: []string{"./cmd/refused"},
	}
	err := c.Ensure(context.Background(), &bytes.Buffer{}, comp)
	if err == nil {
		t.Fatal("Ensure of a refused module succeeded")
	}
	t.Logf("error: %v", err)
	var refused *ProxyRefusedError
	if !errors.As(err, &refused) || refused.ModuleVersion != "example.invalid/refused@v1.2.3" {
		t.Errorf("error is not a ProxyRefusedError naming the module version: %v", err)
	}
}

// TestEnsureCancelStopsGo cancels a build whose go command hangs on a proxy
// that never answers; Ensure must return promptly and leave nothing behind.
func TestEnsureCancelStopsGo(t *testing.T) {
	if _, err := goTool(); err != nil {
		t.Skip(err)
	}
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	t.Setenv("GOPROXY", srv.URL)
	t.Setenv("GONOPROXY", "")
	t.Setenv("GOPRIVATE", "")
	c := Cache{Dir: t.TempDir()}
	comp := Component{
		Name: "hang", Module: "example.invalid/hang", Version: "v1.0.0",
		Binaries: []string{"hang"}, recipe: moduleCopyRecipe(), packages: []string{"./cmd/hang"},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := c.Ensure(ctx, &bytes.Buffer{}, comp)
	if err == nil || !strings.Contains(err.Error(), "deadline exceeded") {
		t.Errorf("Ensure = %v, want a deadline error", err)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("Ensure took %s after cancellation", d)
	}
	if _, err := os.Stat(c.stampPath("hang")); err == nil {
		t.Error("cancelled build wrote a stamp")
	}
	if ents, _ := os.ReadDir(filepath.Join(c.Dir, "tmp")); len(ents) != 0 {
		t.Errorf("scratch dirs left behind: %v", ents)
	}
}

func TestCopyTreeMakesWritable(t *testing.T) {
	src := t.TempDir()
	if err := os.MkdirAll(filepath.Join(src, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(src, "a", "b", "f.go")
	if err := os.WriteFile(f, []byte("package b\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "copy")
	if err := copyTree(src, dst); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dst, "a", "b", "f.go"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm()&0o200 == 0 {
		t.Errorf("copied file mode %v is not owner-writable", fi.Mode())
	}
}

func TestTailFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "log")
	var b strings.Builder
	for i := range 50 {
		b.WriteString(strings.Repeat("x", i%3) + "line\n")
	}
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(tailFile(p, 20), "\n"); got != 19 {
		t.Errorf("tail has %d newlines, want 19", got)
	}
}

// TestAdoptFlatKubernetes moves a build of the flat layout into its release's directory only
// when its stamp matches the release's recipe.
func TestAdoptFlatKubernetes(t *testing.T) {
	c := Cache{Dir: t.TempDir()}
	comp, err := KubernetesComponent("v1.34.2")
	if err != nil {
		t.Fatal(err)
	}
	flat := comp
	flat.Subdir = ""
	if err := os.MkdirAll(c.BinDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, b := range comp.Binaries {
		if err := os.WriteFile(c.Path(b), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.writeStamp(flat); err != nil {
		t.Fatal(err)
	}
	newest, _ := KubernetesComponent(lab.DefaultKubernetesVersion)
	if err := c.adoptFlatKubernetes(newest); err != nil || c.upToDate(newest) {
		t.Fatalf("adopted a v1.34.2 build as %s: err %v", newest.Version, err)
	}
	if err := c.adoptFlatKubernetes(comp); err != nil {
		t.Fatal(err)
	}
	if !c.upToDate(comp) {
		t.Errorf("v1.34.2 is not up to date after adoption; missing %v", c.Missing(comp))
	}
	if _, err := os.Stat(c.Path("kubelet")); !os.IsNotExist(err) {
		t.Errorf("flat kubelet still there: %v", err)
	}
	if c.stampMatches(flat) {
		t.Error("the flat stamp survived adoption")
	}
}
