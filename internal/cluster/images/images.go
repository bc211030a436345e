// Package images builds the container images of the local cluster without a
// registry: a Debian-based tools image for the benchmark pods and
// single-binary images (the pause image, CoreDNS). Each image is written as
// a docker-style image archive (the format of `docker save`) that
// `ctr -n k8s.io images import` loads together with its tag.
//
// Tags are derived from a hash of every input, so an image is rebuilt
// exactly when an input changes and a node that already holds a tag holds
// the right content.
package images

import (
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

const (
	// Registry is the registry host of every image reference built here. It
	// is never contacted: images are imported, and pods must not pull them.
	Registry = "cnibench.local"

	// archiveFormat goes into every tag; bump it when the way archives are
	// assembled changes, so archives built by older code are not reused.
	archiveFormat = 1

	tmpPrefix    = ".tmp-"
	rootfsPrefix = "rootfs-"
	tagLen       = 12
	// keepArchives is how many archives of one image name survive pruning;
	// more than one so that switching between two cnibench builds stays
	// cheap.
	keepArchives = 3

	defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

// Builder builds images and caches them as archives under CacheDir/images.
// The zero value of Progress discards progress messages. Several processes
// may share one CacheDir: builds are serialized by a lock file.
type Builder struct {
	CacheDir string    // e.g. /var/cache/cnibench; archives go to CacheDir/images
	Progress io.Writer // receives one line per slow step; nil discards them

	// mmdebstrap overrides the mmdebstrap program, for tests.
	mmdebstrap string
}

// Image is a built image archive.
type Image struct {
	Ref     string // e.g. "cnibench.local/tools:3f9a1c2b7d10"; the tag hashes all inputs
	Archive string // docker-style image archive holding Ref
}

// Tools returns the tools image: a Debian bookworm root filesystem with
// iperf3, sockperf, iproute2, ethtool, procps and ping as one layer, and
// cnibenchBinary at /usr/local/bin/cnibench as a second, with each of extra (binaries such
// as k6 and traefik, which the Gateway API split runs) beside it. Its default
// command sleeps forever; pods give their own.
//
// The root filesystem is built with mmdebstrap (root, ~50 s, needs the
// Debian mirror) and cached, so a new cnibench binary only costs the
// second layer and a new archive.
func (b Builder) Tools(ctx context.Context, cnibenchBinary string, extra ...string) (Image, error) {
	return b.ToolsFor(ctx, runtime.GOARCH, cnibenchBinary, extra...)
}

// ToolsFor is Tools for nodes of the architecture goarch (CheckArch says which can be built
// here); the binaries must be goarch's. Another architecture's image is named tools-GOARCH and
// its root filesystem is assembled without emulation (foreignRootfsSpec).
func (b Builder) ToolsFor(ctx context.Context, goarch, cnibenchBinary string, extra ...string) (Image, error) {
	if err := CheckArch(goarch); err != nil {
		return Image{}, err
	}
	mm, err := b.findMmdebstrap()
	if err != nil {
		return Image{}, err
	}
	spec, err := toolsRootfsSpec(ctx, mm)
	repo := "tools"
	if goarch != runtime.GOARCH {
		spec, err = foreignRootfsSpec(ctx, mm, goarch)
		repo += "-" + goarch
	}
	if err != nil {
		return Image{}, fmt.Errorf("tools image: %w", err)
	}
	bin, err := fileSHA256(ctx, cnibenchBinary)
	if err != nil {
		return Image{}, fmt.Errorf("tools image: %w", err)
	}
	files := []fileEntry{{name: "usr/local/bin/cnibench", src: cnibenchBinary}}
	extras := map[string]string{}
	for _, path := range extra {
		sum, err := fileSHA256(ctx, path)
		if err != nil {
			return Image{}, fmt.Errorf("tools image: %w", err)
		}
		base := filepath.Base(path)
		extras[base] = sum
		files = append(files, fileEntry{name: "usr/local/bin/" + base, src: path})
	}
	cfg := v1.Config{
		Env:        []string{"PATH=" + defaultPath},
		Cmd:        []string{"sleep", "infinity"},
		WorkingDir: "/",
	}
	inputs := struct {
		Format int
		Rootfs string
		Binary string
		Extras map[string]string `json:",omitempty"`
		Config v1.Config
	}{archiveFormat, spec.key(), bin, extras, cfg}

	return b.build(ctx, repo, goarch, inputs, cfg, func(dir string) ([]mutate.Addendum, func(), error) {
		root, err := b.rootfs(ctx, dir, mm, spec)
		if err != nil {
			return nil, nil, err
		}
		top, err := writeLayer(ctx, filepath.Join(dir, tmpPrefix+"tools-bin.tar.gz"), gzip.BestSpeed,
			func(w io.Writer) error {
				return writeFilesTar(w, files)
			})
		if err != nil {
			return nil, nil, fmt.Errorf("cnibench layer: %w", err)
		}
		adds := []mutate.Addendum{
			{Layer: root.layer(), History: v1.History{
				CreatedBy: "mmdebstrap " + strings.Join(spec.args(), " "),
				Created:   v1.Time{Time: layerTime()},
			}},
			{Layer: top.layer(), History: v1.History{
				CreatedBy: "cnibench binary at /usr/local/bin/cnibench (sha256 " + bin + ")" + extrasNote(extras),
				Created:   v1.Time{Time: layerTime()},
			}},
		}
		return adds, func() { os.Remove(top.Path) }, nil
	})
}

// FromBinary returns an image named repo (cnibench.local/repo:tag) holding only the static binary at
// /<base name of binary>. The binary is the entrypoint and args the default
// arguments, so the container runs [/binary args...] unless a pod sets its
// own args. Used for the pause image and CoreDNS. The binary must be
// statically linked: the image has no libc.
func (b Builder) FromBinary(ctx context.Context, repo, binary string, args []string) (Image, error) {
	if err := checkName(repo); err != nil {
		return Image{}, err
	}
	if err := checkStatic(binary); err != nil {
		return Image{}, fmt.Errorf("image %s: %w", repo, err)
	}
	sum, err := fileSHA256(ctx, binary)
	if err != nil {
		return Image{}, fmt.Errorf("image %s: %w", repo, err)
	}
	base := filepath.Base(binary)
	cfg := v1.Config{
		Env:        []string{"PATH=" + defaultPath},
		Entrypoint: []string{"/" + base},
		Cmd:        args,
		WorkingDir: "/",
	}
	inputs := struct {
		Format int
		Binary string
		Config v1.Config
	}{archiveFormat, sum, cfg}

	return b.build(ctx, repo, runtime.GOARCH, inputs, cfg, func(dir string) ([]mutate.Addendum, func(), error) {
		l, err := writeLayer(ctx, filepath.Join(dir, tmpPrefix+repo+"-bin.tar.gz"), gzip.BestSpeed,
			func(w io.Writer) error {
				return writeFilesTar(w, []fileEntry{{name: base, src: binary}})
			})
		if err != nil {
			return nil, nil, fmt.Errorf("image %s: %w", repo, err)
		}
		adds := []mutate.Addendum{{Layer: l.layer(), History: v1.History{
			CreatedBy: fmt.Sprintf("static binary /%s (sha256 %s)", base, sum),
			Created:   v1.Time{Time: layerTime()},
		}}}
		return adds, func() { os.Remove(l.Path) }, nil
	})
}

// layersFunc makes the layers of an image inside the cache directory dir,
// and returns a function that removes temporary files once the archive is
// written.
type layersFunc func(dir string) (adds []mutate.Addendum, cleanup func(), err error)

// build returns the archive of image repo whose tag hashes inputs, making
// it from layers and cfg unless it is already cached. inputs must include
// cfg and identify the content of every layer.
func (b Builder) build(ctx context.Context, repo, goarch string, inputs any, cfg v1.Config, layers layersFunc) (Image, error) {
	data, err := json.Marshal(inputs)
	if err != nil {
		return Image{}, fmt.Errorf("image %s: encode inputs: %w", repo, err)
	}
	sum := sha256.Sum256(append([]byte(repo+"\n"), data...))
	tag := hex.EncodeToString(sum[:])[:tagLen]
	ref, err := name.NewTag(Registry + "/" + repo + ":" + tag)
	if err != nil {
		return Image{}, fmt.Errorf("image %s: %w", repo, err)
	}
	dir, err := b.dir()
	if err != nil {
		return Image{}, err
	}
	img := Image{Ref: ref.String(), Archive: filepath.Join(dir, repo+"-"+tag+".tar")}
	if reuse(img.Archive) {
		return img, nil
	}

	unlock, err := b.lock(ctx, dir)
	if err != nil {
		return Image{}, err
	}
	defer unlock()
	// Another process may have built it while we waited for the lock.
	if reuse(img.Archive) {
		return img, nil
	}
	removeTemps(dir)

	start := time.Now()
	adds, cleanup, err := layers(dir)
	if err != nil {
		return Image{}, err
	}
	defer cleanup()
	v, err := assemble(adds, cfg, goarch)
	if err != nil {
		return Image{}, fmt.Errorf("image %s: %w", repo, err)
	}
	size, err := writeArchive(ctx, img.Archive, ref, v)
	if err != nil {
		return Image{}, fmt.Errorf("image %s: %w", repo, err)
	}
	fmt.Fprintf(b.progress(), "image %s built in %s (%s archive)\n",
		img.Ref, time.Since(start).Round(time.Millisecond), mib(size))
	pruneArchives(dir, repo)
	return img, nil
}

// reuse reports whether the archive at path exists, and marks it used so
// that pruning keeps it.
func reuse(path string) bool {
	if _, err := os.Stat(path); err != nil {
		return false
	}
	now := time.Now()
	_ = os.Chtimes(path, now, now)
	return true
}

func assemble(adds []mutate.Addendum, cfg v1.Config, goarch string) (v1.Image, error) {
	base, err := mutate.ConfigFile(empty.Image, &v1.ConfigFile{
		Architecture: goarch,
		OS:           "linux",
		Created:      v1.Time{Time: layerTime()},
		Config:       cfg,
		RootFS:       v1.RootFS{Type: "layers"},
	})
	if err != nil {
		return nil, fmt.Errorf("image config: %w", err)
	}
	img, err := mutate.Append(base, adds...)
	if err != nil {
		return nil, fmt.Errorf("add layers: %w", err)
	}
	return img, nil
}

// writeArchive writes img as a docker-style archive tagged ref to path,
// through a temporary file so that path never holds a partial archive. It
// returns the archive's size.
func writeArchive(ctx context.Context, path string, ref name.Tag, img v1.Image) (int64, error) {
	f, err := os.CreateTemp(filepath.Dir(path), tmpPrefix+"archive-*")
	if err != nil {
		return 0, fmt.Errorf("create archive: %w", err)
	}
	defer func() {
		f.Close()
		os.Remove(f.Name())
	}()
	cw := &countWriter{w: f}
	if err := tarball.Write(ref, img, ctxWriter{ctx, cw}); err != nil {
		return 0, fmt.Errorf("write archive %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return 0, fmt.Errorf("write archive %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return 0, fmt.Errorf("write archive %s: %w", path, err)
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return 0, fmt.Errorf("write archive %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return 0, fmt.Errorf("write archive: %w", err)
	}
	return cw.n, nil
}

func (b Builder) progress() io.Writer {
	if b.Progress == nil {
		return io.Discard
	}
	return b.Progress
}

func (b Builder) dir() (string, error) {
	if b.CacheDir == "" {
		return "", errors.New("images: Builder.CacheDir is empty")
	}
	dir := filepath.Join(b.CacheDir, "images")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create image cache: %w", err)
	}
	return dir, nil
}

// lock takes the cache directory's lock, waiting for another process that
// builds images there. Closing the lock file releases it, also when the
// process dies, so a crashed build never blocks later ones.
func (b Builder) lock(ctx context.Context, dir string) (unlock func(), err error) {
	path := filepath.Join(dir, ".lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open image cache lock: %w", err)
	}
	for waited := false; ; waited = true {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if !waited {
			fmt.Fprintf(b.progress(), "waiting for another process building images in %s...\n", dir)
		}
		t := time.NewTimer(250 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			f.Close()
			return nil, fmt.Errorf("wait for image cache lock: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// removeTemps deletes temporary files left by interrupted builds. Only
// called with the lock held, when no other build can be writing them.
func removeTemps(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tmpPrefix) {
			// Errors only mean the next build tries again.
			_ = removeTree(filepath.Join(dir, e.Name()))
		}
	}
}

// pruneArchives keeps the keepArchives most recently used archives of repo;
// each cnibench build makes a new ~50 MB tools archive.
func pruneArchives(dir, repo string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	type archive struct {
		path string
		used time.Time
	}
	var found []archive
	for _, e := range entries {
		tag, ok := strings.CutPrefix(e.Name(), repo+"-")
		if !ok {
			continue
		}
		tag, ok = strings.CutSuffix(tag, ".tar")
		if !ok || !isTag(tag) {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		found = append(found, archive{filepath.Join(dir, e.Name()), info.ModTime()})
	}
	sort.Slice(found, func(i, j int) bool { return found[i].used.After(found[j].used) })
	for i := keepArchives; i < len(found); i++ {
		os.Remove(found[i].path)
	}
}

func isTag(s string) bool {
	if len(s) != tagLen {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}

// checkName accepts names that are valid both as a repository path
// component and as part of a file name.
func checkName(n string) error {
	ok := n != "" && !strings.HasPrefix(n, "-") && !strings.HasSuffix(n, "-") &&
		!strings.HasPrefix(n+"-", rootfsPrefix)
	for _, c := range n {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			ok = false
		}
	}
	if !ok {
		return fmt.Errorf("image name %q: use lower-case letters, digits and inner dashes, and do not start with \"rootfs\"", n)
	}
	return nil
}

// extrasNote names the extra binaries of the tools image in its layer's history.
func extrasNote(extras map[string]string) string {
	var names []string
	for n := range extras {
		names = append(names, n)
	}
	if len(names) == 0 {
		return ""
	}
	sort.Strings(names)
	return " and " + strings.Join(names, ", ")
}
