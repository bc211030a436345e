package binaries

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Pinned versions of the Gateway API ingress: the Traefik proxy that implements it and the
// Gateway API's CRDs.
const (
	// TraefikVersion is the Traefik release built from the Go module proxy. It builds from its
	// module graph unchanged; v3.7.x needs workarounds to build here. Its Gateway provider is
	// compiled against gateway-api v1.4.0 and reads every standard resource at a version
	// GatewayAPIVersion's CRDs still serve (v1, and v1beta1 for ReferenceGrant).
	TraefikVersion = "v3.6.12"
	// GatewayAPIVersion is the Gateway API release whose standard-channel CRDs the cache holds
	// (v1.7 needs a newer Go than the target's). Its TCPRoute and TLSRoute CRDs no longer serve
	// v1alpha2, which is what Traefik's experimental-channel support reads, so Traefik must
	// run without --providers.kubernetesgateway.experimentalchannel.
	GatewayAPIVersion = "v1.6.3"
)

// Component names of the Gateway API ingress. The CRDs are a component of their own so that
// their version moves without rebuilding Traefik (minutes) and Traefik's without re-fetching
// them.
const (
	Traefik    = "traefik"
	GatewayAPI = "gateway-api"
)

// Files of the Gateway API ingress in the cache's bin dir.
const (
	// TraefikBinary is the Traefik proxy (./cmd/traefik of its module).
	TraefikBinary = "traefik"
	// GatewayAPICRDs is every CRD of the Gateway API's standard channel (GatewayClass,
	// Gateway, HTTPRoute, GRPCRoute, ReferenceGrant, ...) as one multi-document manifest, to
	// apply before the proxy starts. It holds CRDs only, so that waiting for every object of
	// the file to be Established works.
	GatewayAPICRDs = "gateway-api-crds.yaml"
)

const (
	traefikModule    = "github.com/traefik/traefik/v3"
	gatewayAPIModule = "sigs.k8s.io/gateway-api"
	// traefikCodename is the codename upstream's release workflow stamps for v3.6.
	traefikCodename = "ramequin"
	// gatewayAPICRDDir is where the module keeps the standard channel's CRDs, one per file.
	gatewayAPICRDDir = "config/crd/standard"
)

// gatewayComponents are Traefik and the Gateway API's CRDs, built by `setup --all`, or on
// first use by a cluster that asks for the Gateway API split; Base leaves them out.
func gatewayComponents() []Component {
	traefik := Component{
		Name:    Traefik,
		Module:  traefikModule,
		Version: TraefikVersion,
		// Measured on the 2-core target with an empty build cache and a mostly cold module
		// cache (~240 modules downloaded): 6 min 56 s, beside another session's load. Most of
		// it is the providers' SDKs, client-go and the 170 MB link.
		ColdBuild: 7 * time.Minute,
		// Its go.mod has replace directives (forks of go-http-auth, mux, minheap), which
		// `go install traefik@version` refuses.
		recipe:   moduleCopyRecipe(),
		packages: []string{"./cmd/traefik"},
		// Upstream's Makefile and goreleaser stamp these; without them `traefik version` says
		// "dev". The build date is left out so the binary is reproducible.
		ldflags: "-s -w" +
			" -X " + traefikModule + "/pkg/version.Version=" + TraefikVersion +
			" -X " + traefikModule + "/pkg/version.Codename=" + traefikCodename,
		verify: verifySpec{
			binary: TraefikBinary,
			args:   []string{"version"},
			want:   TraefikVersion,
		},
	}
	traefik.Binaries = binaryNames(traefik.packages)

	crds := Component{
		Name:    GatewayAPI,
		Module:  gatewayAPIModule,
		Version: GatewayAPIVersion,
		// A module download of ~1 MB and a file copy.
		ColdBuild: 5 * time.Second,
		recipe:    gatewayAPIRecipe(),
		// packages only feeds the recipe hash: which directory the CRDs come from.
		packages: []string{gatewayAPICRDDir + "/*.yaml"},
		Binaries: []string{GatewayAPICRDs},
	}
	return []Component{crds, traefik}
}

// gatewayAPIRecipe builds the gateway-api component: no compile, just the module's
// standard-channel CRDs joined into one manifest.
// Its name is the one it printed as build kind 106: existing stamps hold it.
func gatewayAPIRecipe() recipe { return plainRecipe("kind-106", buildGatewayAPI) }

// buildGatewayAPI downloads the Gateway API module and writes its standard-channel CRDs as
// one manifest. The module is only read in the module cache: nothing is compiled.
func buildGatewayAPI(ctx context.Context, log io.Writer, comp Component, scratch, out string) error {
	info, err := modDownload(ctx, log, scratch, comp.Module, comp.Version)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	used, err := joinCRDs(filepath.Join(info.Dir, filepath.FromSlash(gatewayAPICRDDir)), &buf, log)
	if err != nil {
		return fmt.Errorf("gateway API CRDs: %w", err)
	}
	fmt.Fprintf(log, "# joined %d CRD files into %s: %s\n", len(used), GatewayAPICRDs, strings.Join(used, " "))
	return os.WriteFile(filepath.Join(out, GatewayAPICRDs), buf.Bytes(), 0o644)
}

// joinCRDs writes every *.yaml file of dir that holds CustomResourceDefinitions to w as one
// multi-document manifest, in file name order, and returns the names of the files used.
// Files holding no CRD are left out and named in log: the standard channel also ships a
// ValidatingAdmissionPolicy against downgrades, which a throwaway cluster does not need and
// which has no Established condition to wait for. A file mixing CRDs with other kinds is an
// error, so that a changed layout is noticed instead of shipped.
func joinCRDs(dir string, w io.Writer, log io.Writer) ([]string, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	slices.Sort(paths)
	var used []string
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		kinds := topLevelKinds(data)
		crd := slices.Contains(kinds, "CustomResourceDefinition")
		others := slices.ContainsFunc(kinds, func(k string) bool { return k != "CustomResourceDefinition" })
		switch {
		case crd && others:
			return nil, fmt.Errorf("%s mixes CRDs with other kinds %v", filepath.Base(p), kinds)
		case !crd:
			fmt.Fprintf(log, "# left out %s: kinds %v, no CRD\n", filepath.Base(p), kinds)
			continue
		}
		doc := strings.TrimPrefix(string(data), "---\n")
		doc = strings.TrimRight(doc, "\n") + "\n"
		if len(used) > 0 {
			doc = "---\n" + doc
		}
		if _, err := io.WriteString(w, doc); err != nil {
			return nil, err
		}
		used = append(used, filepath.Base(p))
	}
	if len(used) == 0 {
		return nil, errors.New("no CRD in " + dir)
	}
	return used, nil
}

// topLevelKinds returns the kind of every document of a YAML file: the value of each
// unindented "kind:" line. Nested kinds (such as a CRD's spec.names.kind) are indented and
// not counted.
func topLevelKinds(data []byte) []string {
	var kinds []string
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "kind:"); ok {
			kinds = append(kinds, strings.Trim(strings.TrimSpace(v), `"'`))
		}
	}
	return kinds
}
