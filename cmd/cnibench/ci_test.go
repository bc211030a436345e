package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/compare"
	"github.com/cnibench/cnibench/internal/history"
	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/store"
	"github.com/cnibench/cnibench/internal/testsupport/seedstore"
)

// ciStore is a store as a CI leaves it: twelve nightly runs of branch main, labelled with their
// commit, cross-node throughput around 10 Gbit/s (3 % between runs, 2 % between rounds) and
// tcp-rr latency around 50 µs, then a run of a change with throughput scaled by factor.
func ciStore(t *testing.T, factor float64) (path, newRun string) {
	t.Helper()
	ctx := context.Background()
	path = filepath.Join(t.TempDir(), "results.db")
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rng := rand.New(rand.NewPCG(21, 22))
	t0 := time.Date(2026, 11, 1, 3, 0, 0, 0, time.UTC)
	round := func(mean float64) []float64 {
		return []float64{mean * math.Exp(0.02*rng.NormFloat64()), mean * math.Exp(0.02*rng.NormFloat64()), mean * math.Exp(0.02*rng.NormFloat64())}
	}
	for i := range 13 {
		gbps, labels := 10*math.Exp(0.03*rng.NormFloat64()), map[string]string{"branch": "main", "commit": fmt.Sprintf("c%02d", i)}
		id := fmt.Sprintf("20261101-%02d0000-main", i)
		if i == 12 {
			gbps *= factor
			labels = map[string]string{"branch": "feature", "commit": "f01"}
			id = "20261113-000000-feat"
		}
		cells := []seedstore.Cell{
			{Target: "local", Path: "cross-node", Workload: "tcp-stream/1", Metrics: map[string][]float64{"throughput_gbps": round(gbps)}},
			{Target: "local", Path: "cross-node", Workload: "tcp-rr/64B", Metrics: map[string][]float64{"latency_p50_us": round(50 * math.Exp(0.03*rng.NormFloat64()))}},
		}
		if err := seedstore.Add(ctx, db, seedstore.Run{ID: id, Started: t0.Add(time.Duration(i) * 24 * time.Hour),
			Targets: []record.Target{{Name: "local"}}, Cells: cells, Labels: labels}); err != nil {
			t.Fatal(err)
		}
	}
	return path, "20261113-000000-feat"
}

// TestCIGateAndHistory is the CI's use end to end through the command line: a change that
// drops throughput by 15 % fails `compare --baseline branch=main --last 10` (exit 1, naming the
// metric) and, once stored on main, `history --fail-on-change`; the same change without the
// drop does not fail the gate; results list -l selects the branch's runs.
func TestCIGateAndHistory(t *testing.T) {
	path, feat := ciStore(t, 0.85)
	out, err := execute(t, newRootCommand(), "compare", "--store", path, "--baseline", "branch=main", "--last", "10", feat, "--fail-on", "worse")
	var inc *compare.InconclusiveError
	if err == nil || errors.As(err, &inc) || !strings.Contains(err.Error(), "throughput_gbps") {
		t.Errorf("15 %% drop against the pooled baseline: err %v\n%s", err, out)
	}
	if !strings.Contains(out, "gate: FAIL") || !strings.Contains(out, "pool(branch=main)") {
		t.Errorf("compare output lacks the gate's verdict or the pool:\n%s", out)
	}
	js, _ := execute(t, newRootCommand(), "compare", "--store", path, "--baseline", "branch=main", feat, "--fail-on", "worse", "-o", "json")
	var doc struct {
		Pool []string
		Gate struct{ Outcome string }
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil || doc.Gate.Outcome != "fail" || len(doc.Pool) != 10 {
		t.Errorf("compare -o json with the gate: one document with the gate and the pool: %v, %+v\n%s", err, doc, js)
	}
	list := mustExecute(t, newResultsCommand(), "list", "--store", path, "-l", "branch=main")
	if n := strings.Count(list, "branch=main"); n != 12 || strings.Contains(list, feat) {
		t.Errorf("results list -l branch=main: %d runs\n%s", n, list)
	}
	// History of everything stored: the change's run is the newest point of each series, and
	// one run off the line is not yet a change (a segment needs 3 runs): the gate is what
	// judges a single new run.
	hist, err := execute(t, newRootCommand(), "history", "--store", path, "--fail-on-change")
	if err != nil {
		t.Errorf("history fails on a single run: %v", err)
	}
	if !strings.HasPrefix(hist, "history of 13 run(s)") {
		t.Errorf("history:\n%s", hist)
	}

	// A dry run plans the gate from a stored run's noise: one target, so two runs of it.
	plan := mustExecute(t, newRootCommand(), "run", "--dry-run", "--store", path, "--noise-from", "20261101-000000-main",
		"--paths", "cross-node", "--repetitions", "3")
	if !strings.Contains(plan, "gate plan from run 20261101-000000-main, the spread of its rounds") ||
		!strings.Contains(plan, "cross-node  tcp-stream/1  throughput_gbps  at 3 rounds catches") {
		t.Errorf("run --dry-run --noise-from:\n%s", plan)
	}
	if _, err := execute(t, newRootCommand(), "run", "--store", path, "--noise-from", "20261101-000000-main"); err == nil ||
		!strings.Contains(err.Error(), "--noise-from: only with --dry-run") {
		t.Errorf("--noise-from without --dry-run: %v", err)
	}

	same, feat := ciStore(t, 1)
	out, err = execute(t, newRootCommand(), "compare", "--store", same, "--baseline", "branch=main", feat, "--fail-on", "worse")
	if err != nil && !errors.As(err, &inc) {
		t.Errorf("no change: the gate failed: %v\n%s", err, out)
	}
	t.Logf("unchanged against the pool: %v", err)
	if err != nil && !strings.Contains(err.Error(), "against a pooled baseline, more rounds in every run") {
		t.Errorf("an inconclusive pooled gate does not say what would help: %v", err)
	}
	if _, err := execute(t, newRootCommand(), "compare", "--store", same, "--baseline", "branch=nope", feat); err == nil ||
		!strings.Contains(err.Error(), "--baseline") || !strings.Contains(err.Error(), "needs at least 3") {
		t.Errorf("an empty pool: %v", err)
	}
}

// TestHistoryFailsOnStoredRegression: three runs on main after a 15 % drop make a step that
// `history --fail-on-change` reports with exit status 1, naming the metric and the run.
func TestHistoryFailsOnStoredRegression(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "results.db")
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(23, 24))
	t0 := time.Date(2026, 11, 1, 3, 0, 0, 0, time.UTC)
	for i := range 20 {
		gbps := 10 * math.Exp(0.03*rng.NormFloat64())
		if i >= 16 {
			gbps *= 0.85
		}
		if err := seedstore.Add(ctx, db, seedstore.Run{ID: fmt.Sprintf("run-%02d", i), Started: t0.Add(time.Duration(i) * 24 * time.Hour),
			Targets: []record.Target{{Name: "local"}}, Labels: map[string]string{"branch": "main"},
			Cells: []seedstore.Cell{{Target: "local", Path: "cross-node", Workload: "tcp-stream/1",
				Metrics: map[string][]float64{"throughput_gbps": {gbps, gbps, gbps}}}}}); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	out, err := execute(t, newRootCommand(), "history", "--store", path, "-l", "branch=main", "--fail-on-change")
	var ce *history.ChangeError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "throughput_gbps") || !strings.Contains(err.Error(), "run-16") {
		t.Errorf("history --fail-on-change: %v\n%s", err, out)
	}
	if !strings.Contains(out, "WORSE at run run-16") {
		t.Errorf("history:\n%s", out)
	}
	// The report of the newest run charts the series up to it, the step marked for the worse;
	// that of run 10 stops at run 10, before the step.
	page := mustExecute(t, newRootCommand(), "report", "run-19", "--store", path, "--file", "-", "-o", "html")
	if !strings.Contains(page, `<h2 id="history">`) || !strings.Contains(page, "worse at run run-16") ||
		!strings.Contains(page, `stroke="#cf222e"`) || !strings.Contains(page, "20 runs") || !strings.Contains(page, "<td>branch=main</td>") {
		t.Errorf("report of run-19: no history chart with the step")
	}
	page = mustExecute(t, newRootCommand(), "report", "run-10", "--store", path, "--file", "-", "-o", "html")
	if !strings.Contains(page, "11 runs") || strings.Contains(page, "worse at run") {
		t.Errorf("report of run-10: its history should end at run 10, without a step")
	}
	page = mustExecute(t, newRootCommand(), "report", "run-19", "--store", path, "--file", "-", "-o", "html", "--no-history")
	if strings.Contains(page, `<h2 id="history">`) {
		t.Errorf("--no-history drew the history")
	}
}
