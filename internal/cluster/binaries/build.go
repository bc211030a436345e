package binaries

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	// progressInterval keeps a silent multi-minute compile from looking hung.
	progressInterval = 20 * time.Second
	// logTailLines is how much of the build log a failure carries.
	logTailLines = 20
	// verifyTimeout bounds the smoke test of a freshly built binary.
	verifyTimeout = 30 * time.Second
	// lockPollInterval is how often a waiting Ensure retries the cache lock.
	lockPollInterval = 500 * time.Millisecond
)

// Ensure builds every component of comps (all components when none are
// given) whose binaries are missing or whose stamp does not match the current
// recipe, one after the other, and leaves current components alone. Progress
// goes to w: a line when a build starts, one every ~20 s while it runs, and
// one when it is done. The go commands' own output goes to LogPath.
//
// Concurrent Ensure calls on the same cache serialise on a lock file; the
// second one finds the work done.
func (c Cache) Ensure(ctx context.Context, w io.Writer, comps ...Component) error {
	if c.Dir == "" {
		return errors.New("binaries cache: Dir is empty")
	}
	if w == nil {
		w = io.Discard
	}
	comps = defaultComponents(comps)
	for _, dir := range []string{c.BinDir(), filepath.Join(c.Dir, "logs"), filepath.Join(c.Dir, "tmp")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create cache dir: %w", err)
		}
	}
	unlock, err := c.lock(ctx, w)
	if err != nil {
		return err
	}
	defer unlock()
	// Scratch dirs left by an interrupted build belong to nobody now that we
	// hold the lock; they can be large (a copy of a module tree).
	if err := clearDir(filepath.Join(c.Dir, "tmp")); err != nil {
		return err
	}
	for _, comp := range comps {
		if err := c.adoptFlatKubernetes(comp); err != nil {
			return err
		}
		if c.upToDate(comp) {
			fmt.Fprintf(w, "%s %s: up to date\n", comp.Name, comp.Version)
			continue
		}
		if err := c.build(ctx, w, comp); err != nil {
			return err
		}
	}
	return nil
}

// lock takes an exclusive flock on <Dir>/.lock, polling so that ctx can
// cancel the wait.
func (c Cache) lock(ctx context.Context, w io.Writer) (func(), error) {
	p := filepath.Join(c.Dir, ".lock")
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open cache lock: %w", err)
	}
	said := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", p, err)
		}
		if !said {
			fmt.Fprintf(w, "waiting for another build using %s to finish...\n", c.Dir)
			said = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("wait for cache lock %s: %w", p, ctx.Err())
		case <-time.After(lockPollInterval):
		}
	}
}

// build runs one component's recipe in a scratch dir under the cache and
// moves the results into bin/ only after they all exist and pass the smoke
// test.
func (c Cache) build(ctx context.Context, w io.Writer, comp Component) error {
	name := comp.Name + " " + comp.Version
	scratch, err := os.MkdirTemp(filepath.Join(c.Dir, "tmp"), "build-"+comp.Name+"-")
	if err != nil {
		return fmt.Errorf("build %s: %w", name, err)
	}
	defer os.RemoveAll(scratch)
	out := filepath.Join(scratch, "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		return fmt.Errorf("build %s: %w", name, err)
	}

	logPath := c.LogPath(comp.key())
	logFile, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("build %s: open log: %w", name, err)
	}
	defer logFile.Close()
	fmt.Fprintf(logFile, "# %s: building %s (recipe %s, %s)\n",
		time.Now().Format(time.RFC3339), name, comp.RecipeHash(), comp.kind)

	start := time.Now()
	fmt.Fprintf(w, "building %s... (log: %s)\n", comp.describe(), logPath)
	stop := startProgress(w, comp, start)
	err = c.runRecipe(ctx, logFile, comp, scratch, out)
	if err == nil {
		err = checkOutputs(ctx, logFile, comp, out)
	}
	stop()
	if err != nil {
		return c.buildError(comp, logPath, err)
	}
	if err := c.install(comp, out); err != nil {
		return fmt.Errorf("build %s: %w", name, err)
	}
	fmt.Fprintf(w, "built %s in %s\n", name, time.Since(start).Round(time.Second))
	return nil
}

// buildError adds what the user needs to act on a failed build: the proxy
// refusal if that was the cause, otherwise the end of the log.
func (c Cache) buildError(comp Component, logPath string, err error) error {
	name := comp.Name + " " + comp.Version
	var refused *ProxyRefusedError
	if errors.As(err, &refused) {
		return fmt.Errorf("build %s: %w", name, err)
	}
	tail := tailFile(logPath, 200)
	if mv, ok := proxyRefusal(tail); ok {
		return fmt.Errorf("build %s: %w (%v)", name, refusalError(mv), err)
	}
	return fmt.Errorf("build %s: %w\nlast lines of %s:\n%s", name, err, logPath, tailFile(logPath, logTailLines))
}

// startProgress prints an elapsed-time line every progressInterval until the
// returned function is called. The function waits for the printer to exit so
// nothing is written to w after the build has returned.
func startProgress(w io.Writer, comp Component, start time.Time) func() {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(progressInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fmt.Fprintf(w, "  still building %s %s: %s elapsed (%s cold)\n",
					comp.Name, comp.Version, time.Since(start).Round(time.Second), estimate(comp.ColdBuild))
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

// runRecipe dispatches on the component's build kind.
func (c Cache) runRecipe(ctx context.Context, log io.Writer, comp Component, scratch, out string) error {
	switch comp.kind {
	case goInstall:
		return buildGoInstall(ctx, log, comp, scratch, out)
	case k8sWrapper:
		return buildK8sWrapper(ctx, log, comp, scratch, out)
	case moduleCopy:
		return buildModuleCopy(ctx, log, comp, scratch, out)
	case ciliumBuild:
		return buildCilium(ctx, log, comp, scratch, out)
	case flannelBuild:
		return buildFlannel(ctx, log, comp, scratch, out)
	case gvisorBuild:
		return buildGVisor(ctx, log, comp, scratch, out)
	case crioBuild:
		return buildCRIO(ctx, log, comp, scratch, out)
	case youkiBuild:
		return c.buildYouki(ctx, log, comp, scratch, out)
	case calicoBuild:
		return buildCalico(ctx, log, comp, scratch, out)
	case gatewayAPIBuild:
		return buildGatewayAPI(ctx, log, comp, scratch, out)
	}
	return fmt.Errorf("unknown build kind %s", comp.kind)
}

// buildGoInstall deliberately omits -trimpath: these are the exact commands
// used to warm the machine's build cache, and -trimpath would change every
// compile action's cache key.
func buildGoInstall(ctx context.Context, log io.Writer, comp Component, scratch, out string) error {
	args := []string{"install"}
	if comp.ldflags != "" {
		args = append(args, "-ldflags="+comp.ldflags)
	}
	if len(comp.tags) > 0 {
		args = append(args, "-tags="+strings.Join(comp.tags, ","))
	}
	for _, p := range comp.packages {
		args = append(args, p+"@"+comp.Version)
	}
	return runGo(ctx, log, scratch, goEnv("GOBIN="+out), nil, args...)
}

// buildK8sWrapper builds the Kubernetes commands through a generated module
// that requires k8s.io/kubernetes and repeats its staging replace directives
// with published versions. All commands go into one go build so shared
// packages are compiled once.
func buildK8sWrapper(ctx context.Context, log io.Writer, comp Component, scratch, out string) error {
	info, err := modDownload(ctx, log, scratch, comp.Module, comp.Version)
	if err != nil {
		return err
	}
	gomod, err := os.ReadFile(info.GoMod)
	if err != nil {
		return fmt.Errorf("read %s go.mod: %w", comp.Module, err)
	}
	staging, err := parseStagingModules(string(gomod))
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "# %d staging modules: %s\n", len(staging), strings.Join(staging, " "))
	wrapper, err := wrapperGoMod(comp.Version, staging)
	if err != nil {
		return err
	}
	dir := filepath.Join(scratch, "k8sbuild")
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("create wrapper module: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(wrapper), 0o644); err != nil {
		return fmt.Errorf("write wrapper go.mod: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tools.go"), []byte(wrapperToolsGo(comp.packages)), 0o644); err != nil {
		return fmt.Errorf("write wrapper tools.go: %w", err)
	}
	if err := runGo(ctx, log, dir, goEnv(), nil, "mod", "tidy"); err != nil {
		return err
	}
	args := []string{"build", "-trimpath", "-ldflags", comp.ldflags, "-o", out + string(filepath.Separator)}
	args = append(args, comp.packages...)
	return runGo(ctx, log, dir, goEnv(), nil, args...)
}

// writableModule downloads the component's module and copies it under scratch: the module
// cache copy is read-only, and the builds need to write (go.sum, patches).
func writableModule(ctx context.Context, log io.Writer, comp Component, scratch string) (string, error) {
	info, err := modDownload(ctx, log, scratch, comp.Module, comp.Version)
	if err != nil {
		return "", err
	}
	src := filepath.Join(scratch, "src")
	if err := copyTree(info.Dir, src); err != nil {
		return "", fmt.Errorf("copy module %s: %w", comp.Module, err)
	}
	return src, nil
}

// goBinary is one binary of a component built from a package of its module.
type goBinary struct {
	name string // file name in the cache
	pkg  string // package relative to the module root
	tags []string
}

// buildBinaries runs one go build per binary in the module copy src, with the component's
// ldflags, for components whose binaries need names or build tags of their own.
func buildBinaries(ctx context.Context, log io.Writer, comp Component, src, out string, bins ...goBinary) error {
	for _, b := range bins {
		args := []string{"build", "-trimpath"}
		if len(b.tags) > 0 {
			args = append(args, "-tags", strings.Join(b.tags, ","))
		}
		args = append(args, "-ldflags", comp.ldflags, "-o", filepath.Join(out, b.name), b.pkg)
		if err := runGo(ctx, log, src, goEnv(), nil, args...); err != nil {
			return fmt.Errorf("build %s: %w", b.name, err)
		}
	}
	return nil
}

// buildModuleCopy builds inside a writable copy of the downloaded module:
// the module cache copy is read-only, and `go install mod@v` refuses modules
// whose go.mod has replace directives.
func buildModuleCopy(ctx context.Context, log io.Writer, comp Component, scratch, out string) error {
	src, err := writableModule(ctx, log, comp, scratch)
	if err != nil {
		return err
	}
	args := []string{"build", "-trimpath"}
	if len(comp.tags) > 0 {
		args = append(args, "-tags", strings.Join(comp.tags, ","))
	}
	if comp.ldflags != "" {
		args = append(args, "-ldflags", comp.ldflags)
	}
	args = append(args, "-o", out+string(filepath.Separator))
	args = append(args, comp.packages...)
	return runGo(ctx, log, src, goEnv(), nil, args...)
}

// checkOutputs makes sure the build produced every binary and that the
// component's smoke-test binary starts and reports the expected version.
func checkOutputs(ctx context.Context, log io.Writer, comp Component, out string) error {
	for _, b := range comp.Binaries {
		fi, err := os.Stat(filepath.Join(out, b))
		if err != nil {
			return fmt.Errorf("build produced no %s: %w", b, err)
		}
		if !fi.Mode().IsRegular() || fi.Size() == 0 {
			return fmt.Errorf("build produced an unusable %s", b)
		}
	}
	v := comp.verify
	if v.binary == "" {
		return nil
	}
	vctx, cancel := context.WithTimeout(ctx, verifyTimeout)
	defer cancel()
	cmd := exec.CommandContext(vctx, filepath.Join(out, v.binary), v.args...)
	cmd.Env = append(os.Environ(), v.env...)
	var buf bytes.Buffer
	cmd.Stdout = &buf
	cmd.Stderr = &buf
	cmd.WaitDelay = 5 * time.Second
	runErr := cmd.Run()
	fmt.Fprintf(log, "\n$ %s %s\n%s# exit: %v\n", v.binary, strings.Join(v.args, " "), buf.String(), runErr)
	if !strings.Contains(buf.String(), v.want) {
		return fmt.Errorf("smoke test `%s %s` did not report %q (exit: %v)", v.binary, strings.Join(v.args, " "), v.want, runErr)
	}
	return nil
}

// install moves the built binaries into bin/. Renames within one file system
// are atomic, so bin/ never holds a partly written binary; the stamp goes
// last, so an interruption between renames leaves the component marked for
// rebuild.
func (c Cache) install(comp Component, out string) error {
	if err := c.removeStamp(comp); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(c.BinDir(), comp.Subdir), 0o755); err != nil {
		return fmt.Errorf("install %s: %w", comp.Name, err)
	}
	for _, b := range comp.Binaries {
		src := filepath.Join(out, b)
		if err := os.Chmod(src, 0o755); err != nil {
			return fmt.Errorf("install %s: %w", b, err)
		}
		if err := os.Rename(src, c.BinaryPath(comp, b)); err != nil {
			return fmt.Errorf("install %s: %w", b, err)
		}
	}
	return c.writeStamp(comp)
}

// clearDir removes everything inside dir but keeps dir itself.
func clearDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("clean %s: %w", dir, err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("clean %s: %w", dir, err)
		}
	}
	return nil
}
