package binaries

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// CiliumVersion is the Cilium release built for the cilium datapaths: the
// newest the proxy serves whose module graph it serves too. v1.19.8's go.mod
// is refused, and v1.20.0-v1.20.2 import sigs.k8s.io/mcs-api/controllers,
// which the proxy refuses at every version (and a pseudo-version of
// github.com/osrg/gobgp/v4), so they cannot build here.
const CiliumVersion = "v1.19.7"

// Cilium is the component holding the Cilium agent, operator, CNI plugin and
// debug client, plus the datapath's C sources (CiliumBPFArchive).
const Cilium = "cilium"

// CiliumBPFArchive is the cache file (in the bin dir, next to the binaries)
// holding the module's bpf/ directory as a gzipped tar. The agent compiles
// its datapath from these sources at run time with clang, so they must match
// the agent's version exactly; keeping them in the component means the stamp
// covers them too. A datapath unpacks them into the cluster's state.
const CiliumBPFArchive = "cilium-bpf.tar.gz"

// ciliumRevision and ciliumDate stand for Cilium's commit and tag time in the
// agent's version string, which upstream stamps from git. The proxy's record
// of v1.19.7 gives its time but no commit, so the revision says so rather
// than invent one.
const (
	ciliumRevision = "unknown"
	ciliumDate     = "2026-08-18T08:34:44Z"
)

// ciliumTargets lists what the cilium component builds, in build order.
// Their names are those of upstream's images.
func ciliumTargets() []goBinary {
	return []goBinary{
		{name: "cilium-agent", pkg: "./daemon"},
		{name: "cilium-cni", pkg: "./plugins/cilium-cni"},
		{name: "cilium-dbg", pkg: "./cilium-dbg"},
		// The generic operator is the one without a cloud IPAM provider; it
		// creates the CRDs and garbage-collects identities and endpoints.
		{name: "cilium-operator-generic", pkg: "./operator", tags: []string{"ipam_provider_operator"}},
	}
}

// ciliumComponents are the binaries of the cilium datapaths.
func ciliumComponents() []Component {
	const module = "github.com/cilium/cilium"
	c := Component{
		Name:    Cilium,
		Module:  module,
		Version: CiliumVersion,
		// Most of it is the agent (~130 MB stripped): ~6 min alone with empty
		// caches on the 2-core target; the whole component took 3m48s here
		// with a partly warm build cache.
		ColdBuild: 8 * time.Minute,
		recipe:    ciliumRecipe(),
		// Upstream's Makefile stamps "<version> <revision> <date>"; the agent
		// appends the Go version and parses the whole string as 7 fields.
		ldflags: fmt.Sprintf("-s -w -X '%s/pkg/version.ciliumVersion=%s %s %s'",
			module, strings.TrimPrefix(CiliumVersion, "v"), ciliumRevision, ciliumDate),
		verify: verifySpec{
			binary: "cilium-agent",
			args:   []string{"--version"},
			want:   strings.TrimPrefix(CiliumVersion, "v"),
		},
	}
	for _, t := range ciliumTargets() {
		// packages only feeds the recipe hash here: it records the name,
		// package and tags of every target, so changing any rebuilds.
		c.packages = append(c.packages, t.name+"="+t.pkg+"["+strings.Join(t.tags, ",")+"]")
		c.Binaries = append(c.Binaries, t.name)
	}
	c.Binaries = append(c.Binaries, CiliumBPFArchive)
	return []Component{c}
}

// ciliumRecipe builds the cilium component: a module copy like
// moduleCopyRecipe, but with one go build per binary, because the binaries need
// different build tags and names that differ from their package directories
// (./daemon is upstream's cilium-agent), and with the bpf/ tree packed.
// Its name is the one it printed as build kind 100: existing stamps hold it.
func ciliumRecipe() recipe { return plainRecipe("kind-100", buildCilium) }

// buildCilium builds every target in a writable copy of the module (its
// replace directives defeat go install) and packs the datapath sources.
func buildCilium(ctx context.Context, log io.Writer, comp Component, scratch, out string) error {
	src, err := writableModule(ctx, log, comp, scratch)
	if err != nil {
		return err
	}
	if err := buildBinaries(ctx, log, comp, src, out, ciliumTargets()...); err != nil {
		return err
	}
	if err := packBPF(filepath.Join(src, "bpf"), filepath.Join(out, CiliumBPFArchive), ciliumBPFSkip()...); err != nil {
		return fmt.Errorf("pack cilium bpf sources: %w", err)
	}
	fmt.Fprintf(log, "# packed %s\n", CiliumBPFArchive)
	return nil
}

// ciliumBPFSkip are bpf/ subtrees the agent never reads: unit tests and verifier
// complexity tests (several MB of C and Go), kept out of every cluster's copy.
func ciliumBPFSkip() []string { return []string{"tests", "complexity-tests"} }

// packBPF writes dir as a gzipped tar with paths relative to dir, without the
// top-level entries named in skip.
func packBPF(dir, archive string, skip ...string) error {
	f, err := os.Create(archive)
	if err != nil {
		return err
	}
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	walkErr := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		for _, s := range skip {
			if rel == s {
				return filepath.SkipDir
			}
		}
		if !d.IsDir() && !d.Type().IsRegular() {
			return fmt.Errorf("%s: unexpected file type %s", p, d.Type())
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		hdr, err := tar.FileInfoHeader(fi, "")
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		// Fixed owner and times: the archive depends on the sources only.
		hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "", ""
		hdr.ModTime = time.Unix(0, 0)
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		_, err = io.Copy(tw, in)
		return err
	})
	errs := []error{walkErr, tw.Close(), zw.Close(), f.Close()}
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// UnpackBPF extracts a BPF archive of the cache (CiliumBPFArchive, CalicoBPFArchive)
// into dir (created if needed), for a datapath's daemons. It refuses entries
// that would leave dir.
func UnpackBPF(archive, dir string) error {
	f, err := os.Open(archive)
	if err != nil {
		return fmt.Errorf("unpack %s: %w", filepath.Base(archive), err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("unpack %s: %w", archive, err)
	}
	tr := tar.NewReader(zr)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("unpack %s: %w", archive, err)
	}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("unpack %s: %w", archive, err)
		}
		name := filepath.FromSlash(hdr.Name)
		if !filepath.IsLocal(name) {
			return fmt.Errorf("unpack %s: entry %q leaves the target", archive, hdr.Name)
		}
		target := filepath.Join(dir, name)
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return fmt.Errorf("unpack %s: %w", archive, err)
			}
		case tar.TypeReg:
			if err := writeFileFrom(target, tr, fs.FileMode(hdr.Mode).Perm()); err != nil {
				return fmt.Errorf("unpack %s: %w", archive, err)
			}
		default:
			return fmt.Errorf("unpack %s: entry %q has unexpected type %c", archive, hdr.Name, hdr.Typeflag)
		}
	}
}

func writeFileFrom(path string, r io.Reader, mode fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, r); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
