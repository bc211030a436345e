// Package aarun gives tests the real A/A run of the default suite that the gate's calibration
// was measured on: two identical two-node bridge clusters, the default suite's 20 cells, 7
// rounds, exported with each sample's raw output blanked (internal/compare/testdata). It is
// test support: nothing in the cnibench binary uses it.
package aarun

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/export"
	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/store"
)

// Path is the export's file, wherever the calling test's package is.
func Path() string {
	_, self, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(self), "..", "..", "compare", "testdata", "aa-default-suite.json")
}

// Load reads the run.
func Load(t testing.TB) export.Bundle {
	t.Helper()
	f, err := os.Open(Path())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := export.ReadJSON(f)
	if err != nil {
		t.Fatalf("read %s: %v", Path(), err)
	}
	return b
}

// Store stores the run in db as a run writes one (created running, its targets and samples
// added, then finished as it was) and returns it.
func Store(t testing.TB, db *store.DB) export.Bundle {
	t.Helper()
	ctx := context.Background()
	b := Load(t)
	r := b.Run
	r.Finished, r.Status = time.Time{}, record.StatusRunning
	if err := db.CreateRun(ctx, r); err != nil {
		t.Fatalf("store run %s: %v", r.ID, err)
	}
	for _, tg := range b.Targets {
		tg.RunID = r.ID
		if err := db.AddTarget(ctx, tg); err != nil {
			t.Fatalf("store run %s: %v", r.ID, err)
		}
	}
	for _, s := range b.Samples {
		s.RunID = r.ID
		if err := db.AddSample(ctx, s); err != nil {
			t.Fatalf("store run %s: %v", r.ID, err)
		}
	}
	if err := db.FinishRun(ctx, r.ID, b.Run.Status, b.Run.Finished, b.Run.Note); err != nil {
		t.Fatalf("store run %s: %v", r.ID, err)
	}
	return b
}
