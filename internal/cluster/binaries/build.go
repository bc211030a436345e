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
		time.Now().Format(time.RFC3339), name, comp.RecipeHash(), comp.recipe.name)

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
