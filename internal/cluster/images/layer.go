package images

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// layerTime is the modification time of files this package puts into layers.
// A fixed time keeps a layer's digest a function of its content alone.
func layerTime() time.Time { return time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC) }

// fileLayer is a gzip-compressed layer on disk whose digests were computed
// while it was written, so that writing an archive neither compresses nor
// hashes it again (the tools root filesystem is ~80 MB).
type fileLayer struct {
	Path   string  `json:"-"`
	Digest v1.Hash `json:"digest"` // of the compressed bytes
	DiffID v1.Hash `json:"diffID"` // of the uncompressed tar
	Size   int64   `json:"size"`   // compressed
	// TarSize is the uncompressed size, for progress messages only.
	TarSize int64 `json:"tarSize"`
}

// layer adapts l to go-containerregistry.
func (l fileLayer) layer() v1.Layer { return diskLayer{l} }

type diskLayer struct{ l fileLayer }

func (d diskLayer) Digest() (v1.Hash, error) { return d.l.Digest, nil }
func (d diskLayer) DiffID() (v1.Hash, error) { return d.l.DiffID, nil }
func (d diskLayer) Size() (int64, error)     { return d.l.Size, nil }
func (d diskLayer) MediaType() (types.MediaType, error) {
	return types.DockerLayer, nil
}

func (d diskLayer) Compressed() (io.ReadCloser, error) {
	f, err := os.Open(d.l.Path)
	if err != nil {
		return nil, fmt.Errorf("open layer: %w", err)
	}
	return f, nil
}

func (d diskLayer) Uncompressed() (io.ReadCloser, error) {
	f, err := os.Open(d.l.Path)
	if err != nil {
		return nil, fmt.Errorf("open layer: %w", err)
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("read layer %s: %w", d.l.Path, err)
	}
	return readCloser{zr, f}, nil
}

type readCloser struct {
	io.Reader
	f *os.File
}

func (r readCloser) Close() error { return r.f.Close() }

// writeLayer writes the tar stream that produce emits, gzip-compressed at
// level, to path. It goes through a temporary file so that path only ever
// holds a complete layer.
func writeLayer(ctx context.Context, path string, level int, produce func(io.Writer) error) (fileLayer, error) {
	f, err := os.CreateTemp(filepath.Dir(path), tmpPrefix+"layer-*")
	if err != nil {
		return fileLayer{}, fmt.Errorf("create layer file: %w", err)
	}
	defer func() {
		// Harmless after a successful rename: the temporary name is gone.
		f.Close()
		os.Remove(f.Name())
	}()

	digest, diffID := sha256.New(), sha256.New()
	compressed := &countWriter{w: io.MultiWriter(f, digest)}
	zw, err := gzip.NewWriterLevel(compressed, level)
	if err != nil {
		return fileLayer{}, fmt.Errorf("gzip: %w", err)
	}
	uncompressed := &countWriter{w: io.MultiWriter(zw, diffID)}
	if err := produce(ctxWriter{ctx, uncompressed}); err != nil {
		return fileLayer{}, err
	}
	if err := zw.Close(); err != nil {
		return fileLayer{}, fmt.Errorf("write layer %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fileLayer{}, fmt.Errorf("write layer %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fileLayer{}, fmt.Errorf("write layer %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fileLayer{}, fmt.Errorf("write layer: %w", err)
	}
	return fileLayer{
		Path:    path,
		Digest:  sha256Hash(digest),
		DiffID:  sha256Hash(diffID),
		Size:    compressed.n,
		TarSize: uncompressed.n,
	}, nil
}

func sha256Hash(h hash.Hash) v1.Hash {
	return v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(h.Sum(nil))}
}

// loadLayer reads the description that saveLayer stored next to a cached
// layer. A layer whose size does not match is treated as absent, so a
// truncated file is rebuilt rather than imported.
func loadLayer(metaPath, path string) (fileLayer, error) {
	data, err := os.ReadFile(metaPath)
	if err != nil {
		return fileLayer{}, err
	}
	var l fileLayer
	if err := json.Unmarshal(data, &l); err != nil {
		return fileLayer{}, fmt.Errorf("parse %s: %w", metaPath, err)
	}
	st, err := os.Stat(path)
	if err != nil {
		return fileLayer{}, err
	}
	if st.Size() != l.Size {
		return fileLayer{}, fmt.Errorf("%s has %d bytes, want %d", path, st.Size(), l.Size)
	}
	l.Path = path
	return l, nil
}

// saveLayer stores l's description at metaPath. It is written after the
// layer itself and so marks the cache entry complete.
func saveLayer(metaPath string, l fileLayer) error {
	data, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return fmt.Errorf("encode layer description: %w", err)
	}
	return writeFileAtomic(metaPath, data)
}

func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), tmpPrefix+"*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(f.Name())
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// fileEntry is one file of a layer built from host files.
type fileEntry struct {
	name string // path inside the image, without leading slash
	src  string // host file
}

// writeFilesTar writes a tar holding files, each executable and owned by
// root, plus the directories leading to them. Ownership and times are
// fixed rather than copied from the host, where the binaries may belong to
// a build user.
func writeFilesTar(w io.Writer, files []fileEntry) error {
	tw := tar.NewWriter(w)
	seen := map[string]bool{}
	for _, fe := range files {
		var dirs []string
		for d := filepath.Dir(fe.name); d != "." && d != "/"; d = filepath.Dir(d) {
			dirs = append([]string{d}, dirs...)
		}
		for _, d := range dirs {
			if seen[d] {
				continue
			}
			seen[d] = true
			hdr := rootHeader(d+"/", tar.TypeDir, 0o755, 0)
			if err := tw.WriteHeader(hdr); err != nil {
				return fmt.Errorf("write layer: %w", err)
			}
		}
		if err := addFile(tw, fe); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("write layer: %w", err)
	}
	return nil
}

func addFile(tw *tar.Writer, fe fileEntry) error {
	f, err := os.Open(fe.src)
	if err != nil {
		return fmt.Errorf("open %s: %w", fe.src, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat %s: %w", fe.src, err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", fe.src)
	}
	if err := tw.WriteHeader(rootHeader(fe.name, tar.TypeReg, 0o755, st.Size())); err != nil {
		return fmt.Errorf("write layer: %w", err)
	}
	// A file that grows while it is copied would make tar fail with
	// ErrWriteTooLong; one that shrinks shows up as a short copy.
	if _, err := io.CopyN(tw, f, st.Size()); err != nil {
		return fmt.Errorf("copy %s into layer: %w", fe.src, err)
	}
	return nil
}

func rootHeader(name string, typ byte, mode, size int64) *tar.Header {
	return &tar.Header{
		Typeflag: typ,
		Name:     name,
		Mode:     mode,
		Size:     size,
		Uname:    "root",
		Gname:    "root",
		ModTime:  layerTime(),
		Format:   tar.FormatPAX,
	}
}

// checkStatic returns an error unless path is an ELF executable without a
// program interpreter: images built by FromBinary contain no libc, so a
// dynamically linked binary would fail only later, inside a pod.
func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s is not an ELF executable: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked; the image has no libc (build it with CGO_ENABLED=0)", path)
		}
	}
	return nil
}

// fileSHA256 returns the hex SHA-256 of the file at path.
func fileSHA256(ctx context.Context, path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(ctxWriter{ctx, h}, f); err != nil {
		return "", fmt.Errorf("hash %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// ctxWriter makes long copies stop when ctx is cancelled.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}

// tailBuffer keeps the last max bytes written to it: mmdebstrap logs every
// step, and only the end explains a failure.
type tailBuffer struct {
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// String returns the kept text starting at a line boundary.
func (t *tailBuffer) String() string {
	s := string(t.buf)
	if len(t.buf) >= t.max {
		for i := 0; i < len(s); i++ {
			if s[i] == '\n' {
				s = s[i+1:]
				break
			}
		}
	}
	return s
}
