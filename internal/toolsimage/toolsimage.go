// Package toolsimage gives users' clusters the tools image the local cluster runs: the same
// content, built by the same code (the mmdebstrap root filesystem, the static cnibench binary,
// STREAM and k6), pushed to a registry with the user's registry credentials or written as an
// OCI layout for an air-gapped one. No Docker is needed.
package toolsimage

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"

	"github.com/cnibench/cnibench/internal/cluster/binaries"
	"github.com/cnibench/cnibench/internal/cluster/images"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// Options say where the image's parts come from and where progress goes.
type Options struct {
	// Cache builds k6 and STREAM when they are missing; its Dir also holds the image archives.
	Cache binaries.Cache
	// Self is the static cnibench binary the image carries (the running one).
	Self string
	// Progress receives a line per slow step; nil discards them.
	Progress io.Writer
	// Source is cnibench's module directory, from which it is cross-compiled for the image of
	// another architecture (BuildIndex); unused for this machine's.
	Source string
}

// Build builds the tools image (or finds it cached) as the local cluster's, with the tools of
// binaries.ImageTools but the local cluster's own gateway, and returns it with its local name.
func Build(ctx context.Context, o Options) (v1.Image, images.Image, error) {
	var extras []string
	for _, b := range binaries.ImageTools() {
		if b.LocalOnly {
			continue
		}
		comp, err := binaries.Lookup(b.Component)
		if err != nil {
			return nil, images.Image{}, err
		}
		if err := o.Cache.Ensure(ctx, o.progress(), comp); err != nil {
			return nil, images.Image{}, fmt.Errorf("tools image: %w", err)
		}
		extras = append(extras, o.Cache.BinaryPath(comp, b.Binary))
	}
	built, err := images.Builder{CacheDir: o.Cache.Dir, Progress: o.Progress}.Tools(ctx, o.Self, extras...)
	if err != nil {
		return nil, images.Image{}, err
	}
	img, err := readArchive(built)
	if err != nil {
		return nil, images.Image{}, err
	}
	return img, built, nil
}

func (o Options) progress() io.Writer {
	if o.Progress == nil {
		return io.Discard
	}
	return o.Progress
}

// PushOptions say where an image goes and how to reach the registry.
type PushOptions struct {
	// Ref is the image's name in the registry: REGISTRY/REPOSITORY[:TAG].
	Ref string
	// CAFile, when set, is a PEM bundle trusted besides the system's roots (a registry with
	// a private CA).
	CAFile string
	// Insecure allows plain HTTP (a registry without TLS).
	Insecure bool
	// Keychain resolves the registry's credentials; nil: the docker config ($DOCKER_CONFIG or
	// ~/.docker/config.json), as docker and kubectl users already have them.
	Keychain authn.Keychain
	// Progress receives the push's progress; nil discards it.
	Progress io.Writer
}

// Push pushes img to the registry and returns its name by digest (REPOSITORY@sha256:...),
// which `run --image` takes.
func Push(ctx context.Context, img v1.Image, o PushOptions) (string, error) {
	return push(ctx, o, img.Digest, func(ref name.Reference, opts ...remote.Option) error {
		return remote.Write(ref, img, opts...)
	})
}

// PushIndex pushes idx, an index of the tools image for several architectures (BuildIndex),
// and its images, and returns its name by digest: nodes pull the image of their own platform.
func PushIndex(ctx context.Context, idx v1.ImageIndex, o PushOptions) (string, error) {
	return push(ctx, o, idx.Digest, func(ref name.Reference, opts ...remote.Option) error {
		return remote.WriteIndex(ref, idx, opts...)
	})
}

// push runs write (an image's or an index's) against the registry of o.Ref and returns the
// name by the digest that digest gives.
func push(ctx context.Context, o PushOptions, digest func() (v1.Hash, error), write func(name.Reference, ...remote.Option) error) (string, error) {
	var nameOpts []name.Option
	if o.Insecure {
		nameOpts = append(nameOpts, name.Insecure)
	}
	ref, err := name.ParseReference(o.Ref, nameOpts...)
	if err != nil {
		return "", fmt.Errorf("image reference %q: %w", o.Ref, err)
	}
	rt, err := transportWith(o.CAFile)
	if err != nil {
		return "", err
	}
	keychain := o.Keychain
	if keychain == nil {
		keychain = authn.DefaultKeychain
	}
	updates := make(chan v1.Update, 16)
	total := make(chan int64, 1)
	go func() { total <- reportProgress(o.Progress, updates) }()
	err = write(ref, remote.WithContext(ctx), remote.WithAuthFromKeychain(keychain),
		remote.WithTransport(rt), remote.WithProgress(updates))
	size := <-total
	var terr *transport.Error
	if errors.As(err, &terr) && (terr.StatusCode == http.StatusUnauthorized || terr.StatusCode == http.StatusForbidden) {
		return "", fmt.Errorf("push %s: the registry %s refused the credentials (%d %s): docker login %s writes them to the docker config ($DOCKER_CONFIG or ~/.docker/config.json): %w",
			ref, ref.Context().RegistryStr(), terr.StatusCode, http.StatusText(terr.StatusCode), ref.Context().RegistryStr(), err)
	}
	if err != nil {
		return "", fmt.Errorf("push %s: %w", ref, err)
	}
	if o.Progress != nil {
		// The last update may come before the last bytes are confirmed: done is said here.
		fmt.Fprintf(o.Progress, "pushed 100 %% of %.1f MB\n", float64(size)/1e6)
	}
	sum, err := digest()
	if err != nil {
		return "", fmt.Errorf("push %s: %w", ref, err)
	}
	return ref.Context().Digest(sum.String()).String(), nil
}

// transportWith is the default transport, trusting caFile's certificates besides the
// system's when it is set.
func transportWith(caFile string) (http.RoundTripper, error) {
	t := remote.DefaultTransport.(*http.Transport).Clone()
	if caFile == "" {
		return t, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("CA file: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("CA file %s: no PEM certificate in it", caFile)
	}
	t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return t, nil
}

// reportProgress prints a line at each of the first three quarters of the bytes written,
// until updates closes, and returns the total it was told of.
func reportProgress(w io.Writer, updates <-chan v1.Update) (total int64) {
	next := int64(25)
	for u := range updates {
		if u.Total <= 0 || u.Error != nil {
			continue
		}
		total = u.Total
		for pct := u.Complete * 100 / u.Total; w != nil && pct >= next && next < 100; next += 25 {
			fmt.Fprintf(w, "pushed %d %% of %.1f MB\n", next, float64(u.Total)/1e6)
		}
	}
	return total
}

// WriteLayout writes img into an OCI image layout at dir (created, or added to), for a
// registry the machine cannot reach: copy the directory over and push it from there (crane,
// skopeo or oras read layouts). It returns the image's digest.
func WriteLayout(img v1.Image, dir string) (string, error) {
	return writeLayout(dir, img.Digest, func(p layout.Path) error { return p.AppendImage(img) })
}

// WriteLayoutIndex is WriteLayout for an index of several architectures (BuildIndex).
func WriteLayoutIndex(idx v1.ImageIndex, dir string) (string, error) {
	return writeLayout(dir, idx.Digest, func(p layout.Path) error { return p.AppendIndex(idx) })
}

func writeLayout(dir string, digest func() (v1.Hash, error), add func(layout.Path) error) (string, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		if p, err = layout.Write(dir, empty.Index); err != nil {
			return "", fmt.Errorf("OCI layout %s: %w", dir, err)
		}
	}
	if err := add(p); err != nil {
		return "", fmt.Errorf("OCI layout %s: %w", dir, err)
	}
	sum, err := digest()
	if err != nil {
		return "", fmt.Errorf("OCI layout %s: %w", dir, err)
	}
	return sum.String(), nil
}

// Platform says which nodes can run the image: only those of the architecture it was built
// on (the root filesystem and the binaries are this machine's).
func Platform() string { return "linux/" + runtime.GOARCH }
