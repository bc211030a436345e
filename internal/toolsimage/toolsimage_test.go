package toolsimage

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/cluster/binaries"
	"github.com/cnibench/cnibench/internal/cluster/images"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

func TestProgressByQuarters(t *testing.T) {
	updates := make(chan v1.Update, 8)
	for _, done := range []int64{10, 30, 30, 80, 99} {
		updates <- v1.Update{Total: 100, Complete: done}
	}
	close(updates)
	var out bytes.Buffer
	if total := reportProgress(&out, updates); total != 100 {
		t.Errorf("total %d", total)
	}
	if got := out.String(); got != "pushed 25 % of 0.0 MB\npushed 50 % of 0.0 MB\npushed 75 % of 0.0 MB\n" {
		t.Errorf("progress:\n%s", got)
	}
}

func TestCAFileMustHoldCertificates(t *testing.T) {
	if _, err := transportWith(filepath.Join(t.TempDir(), "none.pem")); err == nil || !strings.Contains(err.Error(), "CA file") {
		t.Errorf("missing CA file: %v", err)
	}
	junk := filepath.Join(t.TempDir(), "junk.pem")
	_ = os.WriteFile(junk, []byte("not a certificate"), 0o600)
	if _, err := transportWith(junk); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("a file without certificates: %v", err)
	}
	if _, err := transportWith(""); err != nil {
		t.Errorf("no CA file: %v", err)
	}
}

// The Dockerfile for people who prefer docker builds the same image: the same Debian packages,
// k6 and STREAM at the versions the cache builds.
func TestDockerfileMatchesTheBuiltImage(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "images", "tools", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	var install string
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, "apt-get install") {
			install = line
		}
	}
	_, pkgs, ok := strings.Cut(install, "--no-install-recommends")
	if !ok {
		t.Fatalf("no apt-get install --no-install-recommends line in the Dockerfile")
	}
	got := strings.Fields(pkgs)
	got = slices.DeleteFunc(got, func(f string) bool { return f == `\` })
	if want := images.ToolsPackages(); !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
		t.Errorf("the Dockerfile installs %v, the image builder %v", got, want)
	}
	for _, pin := range []string{"go.k6.io/k6@" + binaries.K6Version, "stream-benchmark@" + binaries.StreamVersion} {
		if !strings.Contains(text, pin) {
			t.Errorf("the Dockerfile does not build %s", pin)
		}
	}
}
