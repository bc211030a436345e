package binaries

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// Pinned versions of the flannel datapaths.
const (
	// FlannelVersion is the flanneld release: the newest the proxy serves,
	// built with the same recipe as v0.28.4 before it.
	FlannelVersion = "v0.28.10"
	// FlannelCNIVersion is the release of the flannel CNI plugin. The plugin's
	// own module (github.com/flannel-io/cni-plugin) is refused by the proxy at
	// every version; this is its last release in containernetworking/plugins,
	// which the proxy serves.
	FlannelCNIVersion = "v0.9.1"
)

// Flannel is the component holding flanneld and the flannel CNI plugin.
const Flannel = "flannel"

// Binary names of the flannel component. The CNI plugin must be called
// "flannel": that is the "type" a CNI configuration names it by.
const (
	FlanneldBinary   = "flanneld"
	FlannelCNIBinary = "flannel"
)

const (
	flannelModule    = "github.com/flannel-io/flannel"
	flannelCNIModule = "github.com/containernetworking/plugins"
	flannelCNIPkg    = flannelCNIModule + "/plugins/meta/flannel"
	// flanneldPkg is where the build moves flannel's main package inside the
	// module copy: built from the module root, the binary would be named
	// "flannel" and collide with the CNI plugin.
	flanneldPkg = "./cmd/" + FlanneldBinary
)

// flanneldDroppedImports are the backend imports removed from flanneld's main
// package, with the reason for each. Each backend registers itself from its
// package's init, so dropping the import only drops that backend.
func flanneldDroppedImports() map[string]string {
	return map[string]string{
		// Its SDK is refused by the module proxy (for v0.28.10,
		// github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/vpc v1.3.188).
		flannelModule + "/pkg/backend/tencentvpc": "its SDK is refused by the module proxy",
		// The udp backend's proxy is C, and these builds run with CGO_ENABLED=0.
		flannelModule + "/pkg/backend/udp": "it needs cgo",
	}
}

// flannelComponents are the binaries of the flannel datapaths.
func flannelComponents() []Component {
	c := Component{
		Name:    Flannel,
		Module:  flannelModule,
		Version: FlannelVersion,
		// Measured on the 2-core target with empty Go build and module
		// caches: 2 min 40 s of CPU, 4.5 min wall on a busy machine; nearly
		// all of it flanneld (client-go, etcd client, grpc). The plugin takes
		// seconds. With warm caches the whole component builds in ~5 s.
		ColdBuild: 3 * time.Minute,
		recipe:    flannelRecipe(),
		ldflags:   "-s -w -X " + flannelModule + "/pkg/version.Version=" + FlannelVersion,
		// packages only feeds the recipe hash here: the plugin's version and
		// the patch are part of the recipe, so changing either rebuilds.
		packages: []string{
			flanneldPkg + "[-tencentvpc,-udp]",
			flannelCNIPkg + "@" + FlannelCNIVersion,
		},
		Binaries: []string{FlanneldBinary, FlannelCNIBinary},
		verify: verifySpec{
			binary: FlanneldBinary,
			args:   []string{"--version"},
			want:   FlannelVersion,
		},
	}
	return []Component{c}
}

// flannelRecipe builds the flannel component: flanneld from a patched
// copy of its module, then the CNI plugin with go install.
// Its name is the one it printed as build kind 101: existing stamps hold it.
func flannelRecipe() recipe { return plainRecipe("kind-101", buildFlannel) }

// buildFlannel builds flanneld in a writable copy of its module whose main
// package has moved to cmd/flanneld without the backends that cannot be built
// here, then installs the CNI plugin, and smoke-tests the plugin too (the
// component's verify step covers flanneld only).
func buildFlannel(ctx context.Context, log io.Writer, comp Component, scratch, out string) error {
	src, err := writableModule(ctx, log, comp, scratch)
	if err != nil {
		return err
	}
	if err := patchFlanneldMain(src); err != nil {
		return fmt.Errorf("patch %s: %w", comp.Module, err)
	}
	fmt.Fprintf(log, "# moved main.go to %s without the imports of %v\n", flanneldPkg, flanneldDroppedImports())
	if err := buildBinaries(ctx, log, comp, src, out, goBinary{name: FlanneldBinary, pkg: flanneldPkg}); err != nil {
		return err
	}
	// The plugin's module has no replace directives, so go install works; its
	// binary is named after its package directory, "flannel".
	ld := "-s -w -X " + flannelCNIModule + "/pkg/utils/buildversion.BuildVersion=" + FlannelCNIVersion
	if err := runGo(ctx, log, scratch, goEnv("GOBIN="+out), nil, "install", "-ldflags="+ld, flannelCNIPkg+"@"+FlannelCNIVersion); err != nil {
		return fmt.Errorf("build flannel CNI plugin: %w", err)
	}
	return checkOutputs(ctx, log, Component{
		Binaries: []string{FlannelCNIBinary},
		verify:   verifySpec{binary: FlannelCNIBinary, env: []string{"CNI_COMMAND=VERSION"}, want: "supportedVersions"},
	}, out)
}

// patchFlanneldMain moves src/main.go to src/cmd/flanneld/main.go without the
// dropped backend imports. It fails if an import is not found, so that a new
// flannel version whose main.go changed is noticed instead of built as is.
func patchFlanneldMain(src string) error {
	mainGo := filepath.Join(src, "main.go")
	data, err := os.ReadFile(mainGo)
	if err != nil {
		return err
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	dropped := map[string]bool{}
	var kept [][]byte
	for _, l := range lines {
		drop := false
		for imp := range flanneldDroppedImports() {
			if string(bytes.TrimSpace(l)) == `_ "`+imp+`"` {
				dropped[imp], drop = true, true
			}
		}
		if !drop {
			kept = append(kept, l)
		}
	}
	for imp := range flanneldDroppedImports() {
		if !dropped[imp] {
			return fmt.Errorf("main.go has no blank import of %s", imp)
		}
	}
	dir := filepath.Join(src, filepath.FromSlash(flanneldPkg))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), bytes.Join(kept, nil), 0o644); err != nil {
		return err
	}
	return os.Remove(mainGo)
}
