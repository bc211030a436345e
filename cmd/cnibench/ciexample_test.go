package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/cnibench/cnibench/internal/testsupport/aarun"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/compare"
	"github.com/cnibench/cnibench/internal/history"
	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/store"
)

// nightlyFromAA stores, in a real SQLite store, runs as a CI's nightly job on main would leave
// them, each drawn from the A/A run's real samples: 3 rounds (the default suite's) of one of
// its twins, the rounds drawn at random. From run regressAt on, cross-node tcp-stream/1
// throughput is scaled by factor: the regression a CNI upgrade would bring.
func nightlyFromAA(t *testing.T, runs, regressAt int, factor float64) string {
	t.Helper()
	aa := aarun.Load(t)
	byRound := map[[2]any][]record.Sample{} // (target, round) -> measured samples
	maxRound := 0
	for _, s := range aa.Samples {
		if !s.Warmup && s.Round > 0 && s.Path != record.SetupPath {
			byRound[[2]any{s.Target, s.Round}] = append(byRound[[2]any{s.Target, s.Round}], s)
			maxRound = max(maxRound, s.Round)
		}
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "results.db")
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rng := rand.New(rand.NewPCG(31, 32))
	t0 := time.Date(2026, 10, 1, 2, 0, 0, 0, time.UTC)
	for i := range runs {
		id := fmt.Sprintf("20261%03d-020000-main", i)
		started := t0.Add(time.Duration(i) * 24 * time.Hour)
		if err := db.CreateRun(ctx, record.Run{ID: id, Started: started, Status: record.StatusRunning, Suite: "{}\n", Version: "test",
			Labels: map[string]string{"branch": "main", "commit": fmt.Sprintf("c%03d", i)}}); err != nil {
			t.Fatal(err)
		}
		if err := db.AddTarget(ctx, record.Target{RunID: id, Name: "local"}); err != nil {
			t.Fatal(err)
		}
		twin := aa.Targets[rng.IntN(2)].Name
		seq := 0
		for round := 1; round <= 3; round++ {
			for _, s := range byRound[[2]any{twin, 1 + rng.IntN(maxRound)}] {
				s.RunID, s.Target, s.Round, s.Seq = id, "local", round, seq
				if i >= regressAt && s.Path == "cross-node" && s.Workload == "tcp-stream/1" {
					s.Metrics = map[string]float64{"throughput_gbps": s.Metrics["throughput_gbps"] * factor}
				}
				if err := db.AddSample(ctx, s); err != nil {
					t.Fatal(err)
				}
				seq++
			}
		}
		if err := db.FinishRun(ctx, id, record.StatusComplete, started.Add(10*time.Minute), ""); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// TestCIExampleOnAA is the CI's use on real samples: 24 nightly runs of the default suite on
// main, the last 6 with cross-node throughput 15 % lower. history finds the step where it
// is, for the worse, and in that series alone; the gate against the 10 runs before the
// regression catches its first regressed run; and with nothing regressed the gate does not
// fail and the history of all 20 series has no change point.
func TestCIExampleOnAA(t *testing.T) {
	path := nightlyFromAA(t, 24, 18, 0.85)
	out, err := execute(t, newRootCommand(), "history", "--store", path, "-l", "branch=main", "--fail-on-change")
	t.Logf("history:\n%s", out)
	var ce *history.ChangeError
	if !errors.As(err, &ce) || len(ce.Series) != 1 || ce.Series[0].Path != "cross-node" || ce.Series[0].Workload != "tcp-stream/1" {
		t.Errorf("history --fail-on-change: %v", err)
	} else if st := ce.Series[0].Steps[len(ce.Series[0].Steps)-1]; st.Index < 17 || st.Index > 19 {
		t.Errorf("step found at run %d, want 18 (±1)", st.Index)
	}
	first := "20261018-020000-main"
	out, err = execute(t, newRootCommand(), "compare", "--store", path, "--baseline", "branch=main", "--last", "10", first, "--fail-on", "worse")
	t.Logf("compare --baseline:\n%s", out)
	var inc *compare.InconclusiveError
	if err == nil || errors.As(err, &inc) || !strings.Contains(err.Error(), "cross-node tcp-stream/1 throughput_gbps") {
		t.Errorf("the gate on the first regressed run: %v", err)
	}

	flat := nightlyFromAA(t, 24, 24, 1)
	if out, err := execute(t, newRootCommand(), "history", "--store", flat, "--fail-on-change"); err != nil {
		t.Errorf("a flat history fails: %v\n%s", err, out)
	}
	out, err = execute(t, newRootCommand(), "compare", "--store", flat, "--baseline", "branch=main", first, "--fail-on", "worse")
	if err != nil && !errors.As(err, &inc) {
		t.Errorf("nothing changed, and the gate failed: %v\n%s", err, out)
	}
}
