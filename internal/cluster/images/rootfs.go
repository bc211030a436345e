package images

import (
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// rootfsSpec is everything that determines the tools root filesystem. Its
// hash names the cached rootfs layer, and feeds into the tools image tag.
type rootfsSpec struct {
	Format     int      `json:"format"`
	Suite      string   `json:"suite"`
	Variant    string   `json:"variant"`
	Packages   []string `json:"packages"`
	DpkgOpts   []string `json:"dpkgOpts"`
	HookDirs   []string `json:"hookDirs"`
	Mmdebstrap string   `json:"mmdebstrap"` // output of mmdebstrap --version
	Arch       string   `json:"arch"`
	// Mirrors are the chroot's apt sources, one-line style.
	Mirrors []string `json:"mirrors"`
	// SetupHooks run before any package is fetched (apt's pins of the non-free entry).
	SetupHooks []string `json:"setupHooks"`
}

// ToolsPackages are the Debian packages of the tools image (images/tools/Dockerfile installs the
// same).
func ToolsPackages() []string {
	return []string{
		"iperf3", "sockperf", "iproute2", "ethtool", "procps", "iputils-ping",
		// The cpu and memory workloads.
		"stress-ng", "sysbench",
		// The netperf engine: from Debian's non-free component (NonFreePackages).
		"netperf",
	}
}

// NonFreePackages are the tools image's packages from Debian's non-free component, the only
// ones apt may take from it (netperf's licence lets it be redistributed, not modified).
func NonFreePackages() []string { return []string{"netperf"} }

// debianMirror is the archive the tools image's packages come from, as mmdebstrap's default.
const debianMirror = "http://deb.debian.org/debian"

// toolsMirrors are the tools root filesystem's apt sources: mmdebstrap's defaults for a stable
// suite (main, its -updates and its security suite), and the non-free component, which
// toolsPins confines to NonFreePackages.
func toolsMirrors(suite string) []string {
	return []string{
		"deb " + debianMirror + " " + suite + " main",
		"deb " + debianMirror + " " + suite + "-updates main",
		"deb http://deb.debian.org/debian-security " + suite + "-security main",
		"deb " + debianMirror + " " + suite + " non-free",
	}
}

// toolsPins is apt's preferences file for the chroot: nothing from non-free (priority -1)
// but NonFreePackages, so the entry cannot replace or add any other package.
func toolsPins() string {
	pins := "Package: *\nPin: release c=non-free\nPin-Priority: -1\n"
	for _, p := range NonFreePackages() {
		pins += "\nPackage: " + p + "\nPin: release c=non-free\nPin-Priority: 500\n"
	}
	return pins
}

// toolsRootfsSpec describes the Debian root filesystem of the tools image.
// mmdebstrap is the path of the mmdebstrap program; its version is part of
// the spec because another version may assemble a different tree.
func toolsRootfsSpec(ctx context.Context, mmdebstrap string) (rootfsSpec, error) {
	out, err := exec.CommandContext(ctx, mmdebstrap, "--version").Output()
	if err != nil {
		return rootfsSpec{}, fmt.Errorf("%s --version: %w", mmdebstrap, err)
	}
	return rootfsSpec{
		Format: archiveFormat,
		Suite:  "bookworm",
		// essential rather than minbase: apt and the Priority: required
		// set are of no use in a benchmark pod.
		Variant:  "essential",
		Packages: ToolsPackages(),
		DpkgOpts: []string{
			"path-exclude=/usr/share/man/*",
			"path-exclude=/usr/share/info/*",
			"path-exclude=/usr/share/lintian/*",
			"path-exclude=/usr/share/locale/*",
			"path-exclude=/usr/share/doc/*",
			// Keep the licences: the image is a redistribution of the packages.
			"path-include=/usr/share/doc/*/copyright",
		},
		// Sets up the merged /usr symlinks itself and installs
		// usr-is-merged; otherwise apt satisfies init-system-helpers'
		// "usrmerge | usr-is-merged" with usrmerge, which drags in perl.
		// Together with the variant this halves the rootfs (82 vs 146 MB).
		HookDirs:   []string{"/usr/share/mmdebstrap/hooks/merged-usr"},
		Mirrors:    toolsMirrors("bookworm"),
		SetupHooks: []string{`printf '` + toolsPins() + `' > "$1/etc/apt/preferences.d/cnibench-non-free"`},
		Mmdebstrap: strings.TrimSpace(string(out)),
		Arch:       runtime.GOARCH,
	}, nil
}

func (s rootfsSpec) key() string {
	// %#v spells out every field of this struct of strings, so equal inputs give equal keys.
	sum := sha256.Sum256([]byte(fmt.Sprintf("%#v", s)))
	return hex.EncodeToString(sum[:])[:16]
}

func (s rootfsSpec) args() []string {
	args := []string{
		"--variant=" + s.Variant,
		"--include=" + strings.Join(s.Packages, ","),
	}
	for _, o := range s.DpkgOpts {
		args = append(args, "--dpkgopt="+o)
	}
	for _, d := range s.HookDirs {
		args = append(args, "--hook-dir="+d)
	}
	if s.foreign() {
		// Debian's architecture names are Go's for the ones CheckArch accepts.
		args = append(args, "--architectures="+s.Arch)
	}
	for _, h := range s.SetupHooks {
		args = append(args, "--setup-hook="+h)
	}
	// Target "-" streams the tar to stdout, so the rootfs is compressed and
	// hashed on the fly instead of landing on disk uncompressed first. The
	// mirrors follow the target.
	return append(append(args, s.Suite, "-"), s.Mirrors...)
}

// findMmdebstrap locates mmdebstrap, with an error that says how to get it.
func (b Builder) findMmdebstrap() (string, error) {
	name := b.mmdebstrap
	if name == "" {
		name = "mmdebstrap"
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("mmdebstrap is needed to build the tools image; install mmdebstrap (scripts/setup.sh): %w", err)
	}
	return path, nil
}

// rootfs returns the tools root filesystem layer, building it with
// mmdebstrap unless a layer for the same spec is cached in dir. The caller
// holds the cache lock.
func (b Builder) rootfs(ctx context.Context, dir, mmdebstrap string, spec rootfsSpec) (fileLayer, error) {
	stem := spec.stem()
	path := filepath.Join(dir, rootfsPrefix+stem+".tar.gz")
	metaPath := filepath.Join(dir, rootfsPrefix+stem+".json")
	if l, err := loadLayer(metaPath, path); err == nil {
		return l, nil
	}

	fmt.Fprintf(b.progress(), "building tools root filesystem for %s with mmdebstrap (~50 s)...\n", spec.Arch)
	start := time.Now()
	l, err := writeLayer(ctx, path, gzip.DefaultCompression, func(w io.Writer) error {
		return b.runMmdebstrap(ctx, dir, mmdebstrap, spec.args(), w)
	})
	if err != nil {
		return fileLayer{}, fmt.Errorf("build tools root filesystem: %w", err)
	}
	if err := saveLayer(metaPath, l); err != nil {
		return fileLayer{}, err
	}
	fmt.Fprintf(b.progress(), "tools root filesystem built in %s (%s, %s compressed)\n",
		time.Since(start).Round(100*time.Millisecond), mib(l.TarSize), mib(l.Size))
	pruneRootfs(dir, spec)
	return l, nil
}

// runMmdebstrap runs mmdebstrap with args and copies the tarball it writes
// to stdout into w. Its chroot and scratch files go to a temporary
// directory inside dir, so that whatever an interrupted run leaves behind
// is found and removed by the next build.
func (b Builder) runMmdebstrap(ctx context.Context, dir, mmdebstrap string, args []string, w io.Writer) error {
	scratch, err := os.MkdirTemp(dir, tmpPrefix+"mmdebstrap-")
	if err != nil {
		return fmt.Errorf("mmdebstrap scratch directory: %w", err)
	}
	defer func() {
		if err := removeTree(scratch); err != nil {
			fmt.Fprintf(b.progress(), "warning: %v\n", err)
		}
	}()
	cmdCtx, stop := context.WithCancel(ctx)
	defer stop()
	cmd := exec.CommandContext(cmdCtx, mmdebstrap, args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+scratch)
	// In root mode mmdebstrap mounts /proc, /sys and /dev inside its
	// temporary chroot; SIGTERM lets it unmount and delete them, SIGKILL
	// would leave them behind.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	// Stdin stays /dev/null: mmdebstrap never waits for input then.
	stderr := &tailBuffer{max: 4096}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("mmdebstrap: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start mmdebstrap: %w", err)
	}
	_, copyErr := io.Copy(w, stdout)
	if copyErr != nil {
		// Stop mmdebstrap, and keep reading so that neither it nor its tar
		// child blocks on a full pipe while cleaning up its chroot.
		stop()
		go io.Copy(io.Discard, stdout)
	}
	waitErr := cmd.Wait()
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("mmdebstrap: %w", ctx.Err())
	case copyErr != nil:
		return fmt.Errorf("read mmdebstrap output: %w", copyErr)
	case waitErr != nil:
		hint := ""
		if os.Geteuid() != 0 {
			hint = " (not running as root: mmdebstrap needs root, or user namespaces with /etc/subuid entries)"
		}
		return fmt.Errorf("mmdebstrap %s failed%s: %w; its last output:\n%s",
			strings.Join(args, " "), hint, waitErr, indent(stderr.String()))
	}
	return nil
}

// stem names the spec's cached layer below rootfsPrefix: its key, after its architecture when
// that is another than this machine's, so that each architecture keeps its own.
func (s rootfsSpec) stem() string {
	if s.foreign() {
		return s.Arch + "-" + s.key()
	}
	return s.key()
}

// pruneRootfs removes the cached root filesystems of spec's architecture other than spec's;
// only the current spec is ever used again.
func pruneRootfs(dir string, spec rootfsSpec) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	keep := spec.stem()
	for _, e := range entries {
		stem, ok := strings.CutPrefix(e.Name(), rootfsPrefix)
		if !ok {
			continue
		}
		stem, _, _ = strings.Cut(stem, ".")
		arch, _, foreign := strings.Cut(stem, "-")
		sameArch := !foreign && !spec.foreign() || foreign && arch == spec.Arch
		if sameArch && stem != keep {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return "    (nothing)"
	}
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}

func mib(n int64) string {
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// removeTree removes dir unless something is mounted at or below it: a
// chroot whose /dev or /sys is still bind-mounted must not be walked by
// RemoveAll, which would delete the host's files through the mount.
func removeTree(dir string) error {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return fmt.Errorf("not removing %s: %w", dir, err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		// Mount points escape blanks as octal; dir has none, so the raw
		// field compares correctly.
		if mp := f[4]; mp == dir || strings.HasPrefix(mp, dir+"/") {
			return fmt.Errorf("not removing %s: %s is still mounted", dir, mp)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	return nil
}
