package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/record"
)

func TestOpenReadOnly(t *testing.T) { forEachBackend(t, testOpenReadOnly) }

// testOpenReadOnly: a store opened read-only reads what a writer stores, also after it was
// opened, and refuses every write, leaving the store as it was.
func testOpenReadOnly(t *testing.T, b backend) {
	ctx := context.Background()
	loc := b.location(t)
	w, err := Open(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	started := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	if err := w.CreateRun(ctx, record.Run{ID: "ro-1", Started: started, Status: record.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	r, err := OpenReadOnly(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// A run the writer adds after the reader opened is seen at once.
	if err := w.CreateRun(ctx, record.Run{ID: "ro-2", Started: started.Add(time.Hour), Status: record.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	runs, err := r.Runs(ctx)
	if err != nil || len(runs) != 2 {
		t.Fatalf("read-only Runs = %v, %v; want both runs", runs, err)
	}
	if err := r.CreateRun(ctx, record.Run{ID: "ro-3", Started: started, Status: record.StatusRunning}); err == nil {
		t.Error("CreateRun on a read-only store succeeded")
	}
	if err := r.FinishRun(ctx, "ro-1", record.StatusComplete, started.Add(time.Minute), ""); err == nil {
		t.Error("FinishRun on a read-only store succeeded")
	}
	if err := r.DeleteRun(ctx, "ro-2"); err == nil {
		t.Error("DeleteRun on a read-only store succeeded")
	}
	runs, err = w.Runs(ctx)
	if err != nil || len(runs) != 2 || runs[1].Status != record.StatusRunning {
		t.Fatalf("after refused writes, Runs = %+v, %v; want the two running runs unchanged", runs, err)
	}
	// A writer can still write while the reader has the store open.
	if err := w.FinishRun(ctx, "ro-1", record.StatusComplete, started.Add(time.Minute), ""); err != nil {
		t.Fatalf("writer beside a read-only reader: %v", err)
	}
}

// TestOpenReadOnlyRefusesWhatItWouldChange: no store is created where none is, and a store
// whose schema is behind is refused rather than migrated.
func TestOpenReadOnlyRefusesWhatItWouldChange(t *testing.T) {
	ctx := context.Background()
	missing := filepath.Join(t.TempDir(), "none.db")
	if _, err := OpenReadOnly(ctx, missing); !errors.Is(err, ErrNoStore) {
		t.Errorf("OpenReadOnly(missing) = %v, want ErrNoStore", err)
	}
	loc := filepath.Join(t.TempDir(), "old.db")
	d, err := connect(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.migrate(ctx, migrations(d.dialect)[:1]); err != nil {
		t.Fatal(err)
	}
	_ = d.Close()
	if _, err := OpenReadOnly(ctx, loc); err == nil {
		t.Fatal("OpenReadOnly of a store with an old schema succeeded")
	}
	d, err = connect(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if v, err := d.schemaVersion(ctx, d.db); err != nil || v != 1 {
		t.Errorf("schema version after a refused read-only open = %d, %v; want 1, untouched", v, err)
	}
}
