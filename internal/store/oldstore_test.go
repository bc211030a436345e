package store

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/cnibench/cnibench/internal/export"
	"github.com/cnibench/cnibench/internal/label"
	"github.com/cnibench/cnibench/internal/record"
)

// oldRun is a run as testdata/schema2.json holds it: what the first cnibench wrote.
type oldRun struct {
	Run     record.Run
	Targets []record.Target
	Samples []record.Sample
}

// TestOldestStore opens a copy of a store written by the first cnibench (schema version 2; see
// testdata/README.md) and reads every run, target and sample back through today's API: each
// as it was written, with today's defaults for what did not exist then (one pair, no flags,
// no profile, no owner, no labels), and `results list` lists every run.
func TestOldestStore(t *testing.T) {
	ctx := context.Background()
	raw, err := os.ReadFile("testdata/schema2.json")
	if err != nil {
		t.Fatal(err)
	}
	var want []oldRun
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	db, err := os.ReadFile("testdata/schema2.db")
	if err != nil {
		t.Fatal(err)
	}
	loc := filepath.Join(t.TempDir(), "results.db")
	if err := os.WriteFile(loc, db, 0o644); err != nil {
		t.Fatal(err)
	}
	old, err := connect(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := old.schemaVersion(ctx, old.db); err != nil || v != 2 {
		t.Fatalf("testdata/schema2.db: schema version %d, %v; want 2", v, err)
	}
	_ = old.Close()

	d, err := Open(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	runs, err := d.Runs(ctx)
	if err != nil || len(runs) != len(want) {
		t.Fatalf("%d runs, %v; want %d", len(runs), err, len(want))
	}
	samples := 0
	for _, w := range want {
		checkOldRun(t, d, w)
		samples += len(w.Samples)
	}
	list, err := export.List(ctx, d, label.Selector{})
	if err != nil || len(list) != len(want) {
		t.Errorf("results list: %d runs, %v; want %d", len(list), err, len(want))
	}
	// The partial run was cancelled (its note says so); the running one has no owner, so
	// nothing can tell it was killed.
	statuses := map[string]string{}
	for _, info := range list {
		statuses[info.ID] = info.Status
	}
	wantStatus := map[string]string{"20261121-093000-a1b2": record.StatusComplete, "20261121-100500-c3d4": export.Interrupted,
		"20261121-103000-e5f6": record.StatusFailed, "20261121-110000-0718": record.StatusRunning}
	if !reflect.DeepEqual(statuses, wantStatus) {
		t.Errorf("results list statuses: %v, want %v", statuses, wantStatus)
	}
	t.Logf("%d runs and %d samples of schema version 2 read back", len(want), samples)
}

// checkOldRun compares a run read from the migrated store with what was written.
func checkOldRun(t *testing.T, d *DB, w oldRun) {
	t.Helper()
	ctx := context.Background()
	r, err := d.Run(ctx, w.Run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r, w.Run) {
		t.Errorf("run %s:\n got %+v\nwant %+v", w.Run.ID, r, w.Run)
	}
	targets, err := d.Targets(ctx, w.Run.ID)
	if err != nil || !reflect.DeepEqual(targets, w.Targets) {
		t.Errorf("targets of run %s: %+v, %v; want %+v", w.Run.ID, targets, err, w.Targets)
	}
	samples, err := d.Samples(ctx, w.Run.ID)
	if err != nil || len(samples) != len(w.Samples) {
		t.Fatalf("run %s: %d samples, %v; want %d", w.Run.ID, len(samples), err, len(w.Samples))
	}
	for i, s := range samples {
		ws := w.Samples[i]
		ws.Pairs = 1 // every sample of that version measured one pair
		if !reflect.DeepEqual(s, ws) {
			t.Errorf("run %s, sample %d:\n got %+v\nwant %+v", w.Run.ID, i, s, ws)
		}
	}
}
