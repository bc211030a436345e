//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/runner"
)

const adaptiveSuite = `paths: [cross-node]
workloads: [{kind: tcp-stream, streams: 1}]
repetitions: 2
duration: 1s
warmup: 1s
`

// runAdaptive runs a short suite twice with a precision target: a loose one it must reach
// and stop at, and an impossible one it must give up on when the next round would overrun
// the budget, saying which figure missed.
func runAdaptive(ctx context.Context, t *testing.T, dir string) {
	file := filepath.Join(dir, "adaptive.yaml")
	if err := os.WriteFile(file, []byte(adaptiveSuite), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(precision, budget string) (string, time.Duration) {
		start := time.Now()
		_, stderr, err := cliSplit(ctx, "run", "-f", file, "--cluster", runCluster, "--results", filepath.Join(dir, "adaptive.db"),
			"--precision", precision, "--budget", budget, "-o", "json")
		took := time.Since(start)
		t.Logf("--precision %s --budget %s took %s:\n%s", precision, budget, took.Round(time.Second), stderr)
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		return stderr, took
	}
	out, _ := run("60%", "5m")
	if !strings.Contains(out, "precision: all 1 headline figures within ±60 % after") {
		t.Errorf("a loose target was not reported as reached")
	}
	checkWarmupStored(ctx, t, filepath.Join(dir, "adaptive.db"))
	out, took := run("0.001%", "40s")
	for _, want := range []string{"would overrun the 40s budget", "still above ±0.001 %", "local cross-node tcp-stream/1 throughput_gbps: ±"} {
		if !strings.Contains(out, want) {
			t.Errorf("an impossible target: no %q in the progress", want)
		}
	}
	if !strings.Contains(out, "round 3+") {
		t.Errorf("an impossible target added no round within a 40 s budget")
	}
	// Setup and teardown come on top of the budget's last round, not instead of it.
	if took > 40*time.Second+2*time.Minute {
		t.Errorf("the run took %s, far beyond its 40 s budget", took.Round(time.Second))
	}
}

// checkWarmupStored reads the one run of a store: its warm-up round (round 0) is stored, marked
// apart from the results, and the rounds after it are not marked.
func checkWarmupStored(ctx context.Context, t *testing.T, results string) {
	t.Helper()
	_, samples := onlyRun(ctx, t, results, "")
	warm := 0
	for _, s := range samples {
		if s.Path == runner.SetupPath {
			continue
		}
		if s.Warmup != (s.Round == 0) {
			t.Errorf("sample %d of round %d: warm-up %v", s.Seq, s.Round, s.Warmup)
		}
		if s.Warmup {
			warm++
		}
	}
	if warm != 1 {
		t.Errorf("%d warm-up samples stored, want the one cell's", warm)
	}
}
