package toolsimage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/cnibench/cnibench/internal/cluster/binaries"
	"github.com/cnibench/cnibench/internal/cluster/images"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// knownPlatforms are the platforms the tools image can be built for here: this machine's, and
// arm64 from amd64 (images.CheckArch).
func knownPlatforms() []string {
	known := []string{Platform()}
	if runtime.GOARCH == "amd64" {
		known = append(known, "linux/arm64")
	}
	return known
}

// ParsePlatforms reads --platforms (a comma-separated list such as "linux/amd64,linux/arm64")
// into Go architectures, in the order given and without repeats.
func ParsePlatforms(list string) ([]string, error) {
	known := knownPlatforms()
	var archs []string
	seen := map[string]bool{}
	for _, p := range strings.Split(list, ",") {
		p = strings.TrimSpace(p)
		ok := false
		for _, k := range known {
			ok = ok || p == k
		}
		if !ok {
			return nil, fmt.Errorf("--platforms: unknown platform %q; expected a comma-separated list of %s",
				p, strings.Join(known, ", "))
		}
		if arch := strings.TrimPrefix(p, "linux/"); !seen[arch] {
			seen[arch] = true
			archs = append(archs, arch)
		}
	}
	return archs, nil
}

// Built is the tools image for one architecture.
type Built struct {
	Arch  string
	Image v1.Image
	Local images.Image
	// Left names the tools left out of it, which cannot be built for Arch here.
	Left []string
}

// BuildIndex builds the tools image for each of archs (ParsePlatforms) and returns the index
// that holds them, each under its platform: the image a registry serves nodes of any of them.
// The host's is Build's; another architecture's is assembled without emulation: cnibench
// (from o.Source) and the Go tools cross-compiled, Debian's packages for it unpacked.
func BuildIndex(ctx context.Context, o Options, archs []string) (v1.ImageIndex, []Built, error) {
	idx := mutate.IndexMediaType(empty.Index, types.DockerManifestList)
	var all []Built
	for _, arch := range archs {
		b, err := o.buildArch(ctx, arch)
		if err != nil {
			return nil, nil, err
		}
		mt, err := b.Image.MediaType()
		if err != nil {
			return nil, nil, fmt.Errorf("tools image for %s: %w", arch, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: b.Image, Descriptor: v1.Descriptor{
			MediaType: mt,
			Platform:  &v1.Platform{OS: "linux", Architecture: arch},
		}})
		all = append(all, b)
	}
	return idx, all, nil
}

func (o Options) buildArch(ctx context.Context, arch string) (Built, error) {
	if arch == runtime.GOARCH {
		img, local, err := Build(ctx, o)
		return Built{Arch: arch, Image: img, Local: local}, err
	}
	if err := images.CheckArch(arch); err != nil {
		return Built{}, err
	}
	self, err := o.crossCnibench(ctx, arch)
	if err != nil {
		return Built{}, err
	}
	var extras, left []string
	for _, b := range binaries.ImageTools() {
		if b.LocalOnly {
			continue
		}
		comp, err := binaries.Lookup(b.Component)
		if err != nil {
			return Built{}, err
		}
		if err := binaries.CrossReady(comp, arch); err != nil {
			fmt.Fprintf(o.progress(), "leaving %s out of the linux/%s image: %v\n", b.Binary, arch, err)
			left = append(left, b.Binary)
			continue
		}
		if err := o.Cache.EnsureCross(ctx, o.progress(), comp, arch); err != nil {
			return Built{}, fmt.Errorf("tools image for %s: %w", arch, err)
		}
		extras = append(extras, o.Cache.CrossPath(comp, arch, b.Binary))
	}
	local, err := images.Builder{CacheDir: o.Cache.Dir, Progress: o.Progress}.ToolsFor(ctx, arch, self, extras...)
	if err != nil {
		return Built{}, err
	}
	img, err := readArchive(local)
	return Built{Arch: arch, Image: img, Local: local, Left: left}, err
}

// crossCnibench cross-compiles cnibench for arch from its source module o.Source into the
// cache, replacing the previous build (Go's build cache makes a rebuild a link).
func (o Options) crossCnibench(ctx context.Context, arch string) (string, error) {
	if o.Source == "" {
		return "", errors.New("the tools image for another architecture needs cnibench's source to cross-compile it (--source DIR, the module's directory)")
	}
	gomod, err := os.ReadFile(filepath.Join(o.Source, "go.mod"))
	if err != nil || !strings.HasPrefix(string(gomod), "module github.com/cnibench/cnibench\n") {
		return "", fmt.Errorf("--source %s is not cnibench's module directory (no go.mod of github.com/cnibench/cnibench)", o.Source)
	}
	out := filepath.Join(o.Cache.BinDir(), "linux-"+arch, "cnibench")
	for _, d := range []string{filepath.Dir(out), filepath.Dir(o.Cache.LogPath("cnibench"))} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", fmt.Errorf("cnibench for %s: %w", arch, err)
		}
	}
	fmt.Fprintf(o.progress(), "cross-compiling cnibench for linux/%s...\n", arch)
	log, err := os.OpenFile(o.Cache.LogPath("cnibench-"+arch), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return "", fmt.Errorf("cnibench for %s: open build log: %w", arch, err)
	}
	defer log.Close()
	if err := binaries.CrossBuild(ctx, log, o.Source, "./cmd/cnibench", "-s -w", arch, out); err != nil {
		return "", fmt.Errorf("cnibench for %s (log %s): %w", arch, log.Name(), err)
	}
	return out, nil
}

// readArchive opens a built image archive.
func readArchive(local images.Image) (v1.Image, error) {
	tag, err := name.NewTag(local.Ref)
	if err != nil {
		return nil, fmt.Errorf("tools image %s: %w", local.Ref, err)
	}
	img, err := tarball.ImageFromPath(local.Archive, &tag)
	if err != nil {
		return nil, fmt.Errorf("read the tools image archive %s: %w", local.Archive, err)
	}
	return img, nil
}
