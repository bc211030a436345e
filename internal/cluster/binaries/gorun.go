package binaries

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// fallbackGo is where the target machine image installs Go; setup may run
// with a PATH that does not include it.
const fallbackGo = "/usr/local/go/bin/go"

// goTool locates the go command.
func goTool() (string, error) {
	if p, err := exec.LookPath("go"); err == nil {
		return p, nil
	}
	if fi, err := os.Stat(fallbackGo); err == nil && fi.Mode().IsRegular() {
		return fallbackGo, nil
	}
	return "", errors.New("go command not found in PATH or at " + fallbackGo)
}

// goEnv is the environment for every go command. Settings the caller may
// have exported are replaced: GOTOOLCHAIN=local stops go from trying to fetch
// another toolchain (the go directives of these modules are older than the
// local Go, but a download attempt would be a confusing failure), GOFLAGS
// -mod=mod lets go resolve dependencies instead of insisting on vendor/ or a
// complete go.sum, and GOOS/GOARCH are dropped because the binaries run on
// this host.
func goEnv(extra ...string) []string {
	drop := map[string]bool{
		"GOFLAGS": true, "GOTOOLCHAIN": true, "CGO_ENABLED": true, "GOBIN": true,
		"GOOS": true, "GOARCH": true, "GOWORK": true,
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !drop[k] {
			env = append(env, kv)
		}
	}
	env = append(env, "GOFLAGS=-mod=mod -buildvcs=false", "GOTOOLCHAIN=local", "CGO_ENABLED=0", "GOWORK=off")
	return append(env, extra...)
}

// runGo runs one go command in dir with its output appended to log. The
// command runs in its own process group so cancelling ctx also stops the
// compiler and linker processes go has started.
func runGo(ctx context.Context, log io.Writer, dir string, env []string, stdout io.Writer, args ...string) error {
	gobin, err := goTool()
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "\n$ (cd %s && go %s)\n", dir, strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, gobin, args...)
	cmd.Dir = dir
	cmd.Env = env
	if stdout == nil {
		stdout = log
	}
	cmd.Stdout = stdout
	cmd.Stderr = log
	if err := runGroup(cmd, log); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("go %s: %w", args[0], ctx.Err())
		}
		return fmt.Errorf("go %s: %w", strings.Join(args[:min(len(args), 2)], " "), err)
	}
	return nil
}

// runGroup runs a build command in its own process group, so that cancelling its context
// also stops the compilers and linkers it started, and logs how it ended.
func runGroup(cmd *exec.Cmd, log io.Writer) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	err := cmd.Run()
	fmt.Fprintf(log, "# exit after %s: %v\n", time.Since(start).Round(time.Millisecond), err)
	return err
}

// modInfo is the subset of `go mod download -json` output used here.
type modInfo struct {
	Path    string
	Version string
	Error   string
	GoMod   string
	Dir     string
}

// modDownload fetches module@version into the module cache and returns where
// it landed.
func modDownload(ctx context.Context, log io.Writer, dir, module, version string) (modInfo, error) {
	var out bytes.Buffer
	runErr := runGo(ctx, log, dir, goEnv(), &out, "mod", "download", "-json", module+"@"+version)
	_, _ = log.Write(out.Bytes())
	var info modInfo
	if err := json.Unmarshal(out.Bytes(), &info); err != nil {
		if runErr != nil {
			return modInfo{}, fmt.Errorf("download %s@%s: %w", module, version, runErr)
		}
		return modInfo{}, fmt.Errorf("download %s@%s: parse go output: %w", module, version, err)
	}
	if info.Error != "" {
		if mv, ok := proxyRefusal(info.Error); ok {
			return modInfo{}, refusalError(mv)
		}
		return modInfo{}, fmt.Errorf("download %s@%s: %s", module, version, info.Error)
	}
	if runErr != nil {
		return modInfo{}, fmt.Errorf("download %s@%s: %w", module, version, runErr)
	}
	if info.Dir == "" || info.GoMod == "" {
		return modInfo{}, fmt.Errorf("download %s@%s: go reported no module directory", module, version)
	}
	return info, nil
}

// proxyRefusal finds the module version the proxy refused in go's output,
// which looks like
// "k8s.io/api@v0.32.1: reading https://proxy.golang.org/...: 403 Forbidden".
func proxyRefusal(text string) (string, bool) {
	// Compiled per call: this runs once per failed build, and it keeps the
	// package free of package-level variables.
	re := regexp.MustCompile(`(\S+@v[^\s:]+): reading \S+: (?:403|404|410)\b`)
	m := re.FindStringSubmatch(text)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// ProxyRefusedError reports that the Go module proxy refused a module
// version (HTTP 403 "This module version is not available"). The proxy
// reachable from the target machine serves only some versions of some
// modules, and the fix is always to pin another version, so the message says
// so instead of showing a bare HTTP status.
type ProxyRefusedError struct {
	// ModuleVersion is the refused "module@version".
	ModuleVersion string
}

func (e *ProxyRefusedError) Error() string {
	return fmt.Sprintf("the Go module proxy refused %s (403: this module version is not available); "+
		"pin a version the proxy serves", e.ModuleVersion)
}

func refusalError(modver string) error {
	return &ProxyRefusedError{ModuleVersion: modver}
}

// copyTree copies a module from the (read-only) module cache into dst,
// making everything owner-writable because go needs to update go.mod/go.sum
// in the main module when building with -mod=mod.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type().IsRegular():
			fi, err := d.Info()
			if err != nil {
				return err
			}
			return copyFile(p, target, fi.Mode().Perm()|0o200)
		default:
			return fmt.Errorf("copy %s: unexpected file type %s", p, d.Type())
		}
	})
}

func copyFile(src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return out.Close()
}

// tailFile returns the last n lines of a file, for error messages that
// should show why a build failed without making the user open the log.
func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
