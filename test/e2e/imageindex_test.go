//go:build e2e

package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/cluster/binaries"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// TestToolsImageIndexPushedToARegistry pushes the tools image for amd64 and arm64 nodes with
// `cnibench image push --platforms` to a real registry and reads the index back: one manifest
// per platform, each image's config of its own architecture. (What each image holds is
// TestIndexForArm64Nodes's; no arm64 node is run here.)
func TestToolsImageIndexPushedToARegistry(t *testing.T) {
	requireBuilt(t, binaries.Registry)
	before := snapshot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	source, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	reg := startRegistry(ctx, t, t.TempDir())
	repo := reg.addr + "/cnibench/tools"
	out, err := cliEnv(ctx, []string{"DOCKER_CONFIG=" + reg.dockerConfig(t, "s3cret")}, "image", "push", repo+":multi",
		"--ca-file", reg.caFile, "--platforms", "linux/amd64,linux/arm64", "--source", source)
	if err != nil {
		t.Fatalf("image push --platforms: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	pushed := lines[len(lines)-1]
	t.Logf("image push --platforms:\n%s", out)
	ref, err := name.ParseReference(repo + ":multi")
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Index(ref, remote.WithContext(ctx), remote.WithTransport(reg.transport(t)),
		remote.WithAuth(&authn.Basic{Username: "cnb", Password: "s3cret"}))
	if err != nil {
		t.Fatalf("read the pushed index back: %v", err)
	}
	if d, err := idx.Digest(); err != nil || repo+"@"+d.String() != pushed {
		t.Errorf("the registry holds %s (%v), the command printed %s", d, err, pushed)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range m.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, d.Platform.String()+"="+cf.OS+"/"+cf.Architecture)
	}
	if want := "linux/amd64=linux/amd64 linux/arm64=linux/arm64"; strings.Join(got, " ") != want {
		t.Errorf("index platforms=configs %v, want %s", got, want)
	}
	reg.stop(t)
	assertClean(t, before)
}
