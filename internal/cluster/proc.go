package cluster

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// daemon is one long-running process of the cluster.
type daemon struct {
	name   string   // unique within the cluster, e.g. "node1-kubelet"; names the log and pid file
	netns  string   // network namespace name under /run/netns
	cgroup string   // cgroup path joined in every hierarchy before exec
	argv   []string // binary and arguments
	env    []string // extra environment
}

// running is a started daemon; done closes when it exits while this process still owns it.
type running struct {
	name string
	pid  int
	log  string
	done chan struct{}
	err  error
}

// joinAndExec is run by sh inside the node's network namespace: it moves itself into the
// cluster's cgroups and then becomes the daemon, so the daemon and all its children are
// accounted to, and found by, the cluster's cgroup from their first instruction.
const joinAndExec = `for f in $CNB_CGROUP_PROCS; do echo $$ > "$f" || exit 97; done; exec "$@"`

// supervisor starts a cluster's daemons and keeps them: a daemon's death fails the create's
// waits at once, and an aborted create kills what it started.
type supervisor struct {
	dir, logDir, runDir string // the cluster's state directory, its logs and its pid files
	cg                  cgroupTree

	mu      sync.Mutex
	daemons []*running
}

func newSupervisor(l Layout, s Spec, cg cgroupTree) *supervisor {
	return &supervisor{dir: l.Dir(s.Name), logDir: l.LogDir(s.Name), runDir: filepath.Join(l.Dir(s.Name), "run"), cg: cg}
}

// start launches d detached from the terminal (its own session, so Ctrl-C on the CLI does not
// reach it) with output appended to its log, and records its pid for delete.
func (sv *supervisor) start(d daemon) (*running, error) {
	for _, dir := range []string{sv.logDir, sv.runDir} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("start %s: %w", d.name, err)
		}
	}
	logPath := sv.logFile(d.name)
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("start %s: open log: %w", d.name, err)
	}
	defer logf.Close()
	if err := sv.cg.ensure(d.cgroup); err != nil {
		return nil, fmt.Errorf("start %s: %w", d.name, err)
	}
	args := append([]string{"--net=/run/netns/" + d.netns, "--", "sh", "-c", joinAndExec, "cnb-" + d.name}, d.argv...)
	cmd := exec.Command("nsenter", args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), d.env...)
	cmd.Env = append(cmd.Env, "CNB_CGROUP_PROCS="+strings.Join(sv.cg.procsFiles(d.cgroup), " "))
	cmd.Dir = sv.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s (%s): %w", d.name, d.argv[0], err)
	}
	r := &running{name: d.name, pid: cmd.Process.Pid, log: logPath, done: make(chan struct{})}
	if err := os.WriteFile(filepath.Join(sv.runDir, d.name+".pid"), []byte(strconv.Itoa(r.pid)), 0o644); err != nil {
		_ = cmd.Process.Kill()
		return nil, fmt.Errorf("start %s: record pid: %w", d.name, err)
	}
	// Reap while we live, so a crashed daemon is noticed at once instead of lingering as a zombie.
	go func() {
		r.err = cmd.Wait()
		close(r.done)
	}()
	sv.mu.Lock()
	sv.daemons = append(sv.daemons, r)
	sv.mu.Unlock()
	return r, nil
}

// logFile is the log of the daemon called name.
func (sv *supervisor) logFile(name string) string { return filepath.Join(sv.logDir, name+".log") }

// deadDaemon returns the error of the first started daemon that has exited.
func (sv *supervisor) deadDaemon() error {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	for _, r := range sv.daemons {
		if err := r.exited(); err != nil {
			return err
		}
	}
	return nil
}

// poll waits for cond, failing early when a daemon dies, the context ends or timeout passes.
func (sv *supervisor) poll(ctx context.Context, what string, timeout time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if err := sv.deadDaemon(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s", timeout, what)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// killAll kills the daemons started and waits until they are reaped. Delete finds processes
// through the cluster's cgroup, but a daemon started a moment ago may still be in its
// nsenter/sh prologue, not yet in that cgroup; as the parent, the create knows it regardless.
func (sv *supervisor) killAll(ctx context.Context) {
	sv.mu.Lock()
	own := append([]*running(nil), sv.daemons...)
	sv.mu.Unlock()
	for _, r := range own {
		_ = syscall.Kill(r.pid, syscall.SIGKILL)
	}
	for _, r := range own {
		select {
		case <-r.done:
		case <-ctx.Done():
			return
		}
	}
}

// exited returns an error with the tail of the daemon's log if it has already exited.
func (r *running) exited() error {
	select {
	case <-r.done:
		return fmt.Errorf("%s exited (%v); last lines of %s:\n%s", r.name, r.err, r.log, tail(r.log, 25))
	default:
		return nil
	}
}

// tail returns the last n lines of a file, for error messages.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  " + strings.Join(lines, "\n  ")
}

// stopPids sends SIGTERM to the processes, waits for them to go, and SIGKILLs what remains.
func stopPids(ctx context.Context, pids []int, grace time.Duration) {
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if !anyAlive(pids) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	// SIGKILL is not synchronous: wait until the kernel has torn the processes down, because
	// their mounts and namespaces are released only then.
	for i := 0; i < 100 && anyAlive(pids); i++ {
		time.Sleep(20 * time.Millisecond)
	}
}

// anyAlive reports whether any pid is a live (non-zombie) process.
func anyAlive(pids []int) bool {
	for _, pid := range pids {
		if alive(pid) {
			return true
		}
	}
	return false
}

func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name, which may itself contain spaces.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// inCgroup reports whether pid belongs to a cgroup at or below path, which guards pid files
// against pid reuse.
func inCgroup(pid int, path string) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(data), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && (parts[2] == path || strings.HasPrefix(parts[2], path+"/")) {
			return true
		}
	}
	return false
}

// readPid reads a pid file; zero when it is missing or malformed.
func readPid(path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(data)))
	if err != nil {
		return 0
	}
	return pid
}

// run executes a short command and returns its error with its output.
func run(ctx context.Context, name string, args ...string) error {
	return runFor(ctx, 60*time.Second, name, args...)
}

// runFor is run with a timeout of the caller's.
func runFor(ctx context.Context, timeout time.Duration, name string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
