//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/runner"
)

// deathSuite runs long enough for three components to die under it, one after the other.
const deathSuite = `
paths: [same-node, cross-node]
workloads:
  - {kind: tcp-rr, size: 64}
repetitions: 100
duration: 1s
warmup: 1s
`

// placedOn reads the nodes of the client (A) and the remote server (B) from a run's progress.
var placedOn = regexp.MustCompile(`deploying \d+ pods \(1 pairs\) on (\S+), (\S+) \(namespace`)

// loseComponents kills, during one run, the remote server's kubelet, then the client node's
// containerd, then the API server. The samples that need what died fail naming it, the others
// go on, the run ends as partial with every finished sample stored, and the cluster's delete
// (by the caller) must still leave the host clean. It breaks the cluster: it runs last.
func loseComponents(ctx context.Context, t *testing.T, dir string) {
	suiteFile := filepath.Join(dir, "death.yaml")
	results := filepath.Join(dir, "death.db")
	if err := os.WriteFile(suiteFile, []byte(deathSuite), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startCLI(t, "run", "-f", suiteFile, "--cluster", runCluster, "--results", results, "--precision", "off")
	if !s.waitLine(t, "[  6/", 5*time.Minute) {
		t.Fatalf("run ended early:\n%s", s.output())
	}
	m := placedOn.FindStringSubmatch(s.output())
	if m == nil {
		t.Fatalf("no placement line in the progress:\n%s", s.output())
	}
	nodeA, nodeB := m[1], m[2]
	for _, step := range []struct{ daemon, want string }{
		{nodeB + "-kubelet", nodeB + "-kubelet"},
		{nodeA + "-containerd", nodeA + "-containerd"},
	} {
		killDaemon(t, step.daemon)
		if !s.waitLine(t, step.want, 3*time.Minute) {
			t.Fatalf("the run ended before a sample named %s:\n%s", step.want, s.output())
		}
	}
	killDaemon(t, "kube-apiserver")
	if err := s.wait(t, 5*time.Minute); err == nil {
		t.Errorf("a run that lost its API server exited 0:\n%s", s.output())
	}
	out := s.output()
	if !strings.Contains(out, "lost its control plane") || !strings.Contains(out, "kube-apiserver") {
		t.Errorf("the run does not say it lost the API server:\n%s", out)
	}
	checkLossStored(ctx, t, results, out)
}

// killDaemon SIGKILLs one daemon of the shared local cluster by its pid file.
func killDaemon(t *testing.T, daemon string) {
	t.Helper()
	pid := daemonPid(t, runCluster, daemon)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill %s (pid %d): %v", daemon, pid, err)
	}
	t.Logf("killed %s (pid %d)", daemon, pid)
}

// progressLine is one finished sample's line.
var progressLine = regexp.MustCompile(`(?m)^\[\s*\d+/\d+\]`)

// checkLossStored checks the store after the run: partial, every sample the progress reported
// stored, good ones measured, and every failure explained by what was lost.
func checkLossStored(ctx context.Context, t *testing.T, results, out string) {
	run, samples := onlyRun(ctx, t, results, out)
	if run.Status != record.StatusPartial || !strings.Contains(run.Note, "kube-apiserver") {
		t.Errorf("run status %q, note %q; want partial, naming kube-apiserver", run.Status, run.Note)
	}
	var measured, good int
	named := map[string]bool{}
	for _, smp := range samples {
		if smp.Path == runner.SetupPath {
			continue
		}
		measured++
		switch {
		case smp.Error == "" && len(smp.Metrics) > 0:
			good++
		case !strings.HasPrefix(smp.Error, "lost "):
			t.Errorf("sample %d (%s) failed without naming what was lost: %s", smp.Seq, smp.Path, smp.Error)
		default:
			for _, what := range []string{"kubelet", "containerd", "kube-apiserver"} {
				named[what] = named[what] || strings.Contains(smp.Error, what)
			}
		}
	}
	if reported := len(progressLine.FindAllString(out, -1)); measured != reported {
		t.Errorf("%d samples stored, %d reported finished", measured, reported)
	}
	if good < 5 || !named["kubelet"] || !named["containerd"] {
		t.Errorf("%d good samples of %d; failures named %v", good, measured, named)
	}
}

// daemonPid reads the pid file a local cluster keeps for one of its daemons.
func daemonPid(t *testing.T, clusterName, daemon string) int {
	t.Helper()
	path := filepath.Join(cluster.DefaultLayout().Dir(clusterName), "run", daemon+".pid")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatalf("pid file %s: %v", path, err)
	}
	return pid
}
