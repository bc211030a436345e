//go:build e2e

// Package e2e runs the cnibench binary as a user would, as root, against real local clusters,
// and checks with host snapshots that nothing outlives a delete, a failed or interrupted
// create, or a killed CLI followed by delete.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/cluster/binaries"
	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/store"
	"github.com/cnibench/cnibench/internal/testsupport/hostsnap"
)

// cnibenchBin is built once for the package by TestMain.
var cnibenchBin string

func TestMain(m *testing.M) {
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "e2e tests need root (CI runs them as root)")
		os.Exit(1)
	}
	dir, err := os.MkdirTemp("", "cnibench-e2e-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cnibenchBin = filepath.Join(dir, "cnibench")
	// kubectl, which the tests run as a user would, caches discovery in ~/.kube by default.
	if err := os.Setenv("KUBECACHEDIR", filepath.Join(dir, "kube-cache")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// As scripts/setup.sh builds bin/cnibench, so that the binaries are the same bytes: the
	// tools image is cached by its binary's digest, and the cgroup v2 VM, which runs
	// bin/cnibench on top of the host's cache, then finds the image these tests built instead
	// of building it again under emulation (32 s).
	version := "dev"
	if out, err := exec.Command("git", "describe", "--always", "--dirty").Output(); err == nil {
		version = strings.TrimSpace(string(out))
	}
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X main.version="+version, "-o", cnibenchBin, "github.com/cnibench/cnibench/cmd/cnibench")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build cnibench:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// cli runs cnibench to completion and returns its combined output.
func cli(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, cnibenchBin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// startCLI starts cnibench and lets the caller wait for a line of its output.
type started struct {
	cmd   *exec.Cmd
	mu    sync.Mutex
	out   bytes.Buffer
	lines chan string
	done  chan error
}

func startCLI(t *testing.T, args ...string) *started {
	t.Helper()
	s := &started{cmd: exec.Command(cnibenchBin, args...), lines: make(chan string, 1000), done: make(chan error, 1)}
	pr, pw := io.Pipe()
	s.cmd.Stdout, s.cmd.Stderr = pw, pw
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			s.mu.Lock()
			s.out.WriteString(sc.Text() + "\n")
			s.mu.Unlock()
			select {
			case s.lines <- sc.Text():
			default:
			}
		}
	}()
	go func() {
		err := s.cmd.Wait()
		pw.Close()
		s.done <- err
	}()
	return s
}

// waitLine waits for an output line containing want; false if the process ended first.
func (s *started) waitLine(t *testing.T, want string, timeout time.Duration) bool {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case l := <-s.lines:
			if strings.Contains(l, want) {
				return true
			}
		case err := <-s.done:
			s.done <- err
			return false
		case <-deadline:
			t.Fatalf("no line %q within %s; output:\n%s", want, timeout, s.output())
		}
	}
}

// running reports whether the process has not exited yet.
func (s *started) running() bool {
	select {
	case err := <-s.done:
		s.done <- err
		return false
	default:
		return true
	}
}

func (s *started) output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

// wait returns the process's exit error, failing the test on timeout.
func (s *started) wait(t *testing.T, timeout time.Duration) error {
	t.Helper()
	select {
	case err := <-s.done:
		return err
	case <-time.After(timeout):
		_ = s.cmd.Process.Kill()
		t.Fatalf("cnibench did not exit within %s; output:\n%s", timeout, s.output())
		return nil
	}
}

// snapshot takes the host snapshot a test compares the host with later, and the other lanes'
// clusters then.
func snapshot(t *testing.T) hostShot {
	t.Helper()
	// Before and after the snapshot: another lane's cluster created or deleted while it is
	// taken shows in it, and must be among the others either way.
	others := laneOthers(t, true)
	s := takeHost(t)
	return hostShot{Snapshot: s, others: others.merge(laneOthers(t, true))}
}

// takeHost takes a host snapshot: the side of a comparison that needs no other lanes' clusters.
func takeHost(t *testing.T) hostsnap.Snapshot {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := hostsnap.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// assertClean compares the host with a snapshot taken before the test's cluster existed,
// allowing a few seconds for the kernel to finish tearing namespaces down.
func assertClean(t *testing.T, before hostShot) {
	t.Helper()
	assertCleanBut(t, before, func(string) bool { return false })
}

// kubeletQoS matches the QoS-level cgroups a kubelet makes the first time a pod of that class
// starts on its node (in each cgroup v1 hierarchy): they belong to the node, not to a run, and
// go with the cluster.
var kubeletQoS = regexp.MustCompile(`^\+ cgroup \S+/cnb-[^/]+/[^/]+/kubepods(/besteffort|/burstable)?$`)

// assertCleanBut is assertClean for a cluster that lives on: lines for which owned is true
// are the cluster's own. When tests run in lanes, a difference that another lane's clusters
// or processes explain is not this test's (lanes_test.go).
func assertCleanBut(t *testing.T, before hostShot, owned func(string) bool) {
	t.Helper()
	var diff, foreign []string
	for i := 0; i < 20; i++ {
		diff, foreign = diff[:0], foreign[:0]
		others := before.others.merge(laneOthers(t, false))
		for _, line := range hostsnap.Diff(before.Snapshot, takeHost(t)) {
			switch {
			case owned(line):
			case others != nil && others.explain(line, ""):
				foreign = append(foreign, line)
			default:
				diff = append(diff, line)
			}
		}
		if len(diff) == 0 {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if len(foreign) > 0 {
		t.Logf("host differences caused by the other lanes' tests (%d), ignored:\n  %s", len(foreign), strings.Join(foreign, "\n  "))
	}
	if len(diff) > 0 {
		t.Errorf("host differs from before the cluster existed:\n  %s", strings.Join(diff, "\n  "))
	}
}

// forceDelete is a safety net so one failed test does not poison the next.
func forceDelete(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, _ = cli(ctx, "cluster", "delete", "--name", name)
}

// cliEnv runs cnibench with extra environment variables.
func cliEnv(ctx context.Context, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, cnibenchBin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// runCmd runs a host command and returns its output.
func runCmd(ctx context.Context, name string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// cliSplit runs cnibench and returns stdout and stderr separately.
func cliSplit(ctx context.Context, args ...string) (string, string, error) {
	cmd := exec.CommandContext(ctx, cnibenchBin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

// runLogged runs `cnibench run` with args, logs its progress (stderr) and fails the test when it
// fails; it returns the run's stdout and stderr.
func runLogged(ctx context.Context, t *testing.T, args ...string) (stdout, stderr string) {
	t.Helper()
	stdout, stderr, err := cliSplit(ctx, append([]string{"run"}, args...)...)
	t.Logf("progress:\n%s", stderr)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stdout)
	}
	return stdout, stderr
}

// onlyRun reads a store that must hold exactly one run: the run and its samples (detail names
// the run in the failure).
func onlyRun(ctx context.Context, t *testing.T, results, detail string) (record.Run, []record.Sample) {
	t.Helper()
	db, err := store.Open(ctx, results)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	runs, err := db.Runs(ctx)
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs: %d, %v; want one\n%s", len(runs), err, detail)
	}
	samples, err := db.Samples(ctx, runs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	return runs[0], samples
}

// requireBuilt fails the test when a component is not in the cache (the test script's setup
// builds every one).
func requireBuilt(t *testing.T, name string) {
	t.Helper()
	comp, err := binaries.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := binaries.Default().Check(comp); err != nil {
		t.Fatalf("%s is not built: %v", name, err)
	}
}

// createCluster runs `cluster create` with args, failing the test if it fails, and logs how
// long it took with its progress lines.
func createCluster(ctx context.Context, t *testing.T, args ...string) {
	t.Helper()
	createClusters(ctx, t, args)
}

// createClusters runs one `cluster create` per argument list at once, as a user creating a
// family of clusters would, and fails the test after all have ended if any failed. Five at once
// took 93 s against 141 s one after the other (bridge, both flannel modes and two Cilium modes).
func createClusters(ctx context.Context, t *testing.T, argLists ...[]string) {
	t.Helper()
	type created struct {
		out  string
		err  error
		took time.Duration
	}
	results := make([]created, len(argLists))
	var wg sync.WaitGroup
	for i, args := range argLists {
		wg.Go(func() {
			start := time.Now()
			out, err := cli(ctx, append([]string{"cluster", "create"}, args...)...)
			results[i] = created{out, err, time.Since(start)}
		})
	}
	wg.Wait()
	failed := false
	for i, r := range results {
		if r.err != nil {
			failed = true
			t.Errorf("create %s: %v\n%s", strings.Join(argLists[i], " "), r.err, r.out)
			continue
		}
		t.Logf("create %s took %s:\n%s", strings.Join(argLists[i], " "), r.took.Round(100*time.Millisecond), r.out)
	}
	if failed {
		t.FailNow()
	}
}

// deleteCluster runs `cluster delete`, failing the test if it fails, and logs how long it took.
func deleteCluster(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	start := time.Now()
	if out, err := cli(ctx, "cluster", "delete", "--name", name); err != nil {
		t.Fatalf("delete: %v\n%s", err, out)
	}
	t.Logf("delete took %s", time.Since(start).Round(100*time.Millisecond))
}
