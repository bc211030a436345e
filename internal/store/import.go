package store

import (
	"context"
	"fmt"

	"github.com/cnibench/cnibench/internal/record"
)

// HasSample tells whether the run holds a sample numbered seq: a write that failed with a
// Transient error may have committed, and is retried only if it did not.
func (d *DB) HasSample(ctx context.Context, runID string, seq int) (bool, error) {
	var n int
	if err := d.queryRow(ctx, d.db, `SELECT COUNT(*) FROM samples WHERE run_id = ? AND seq = ?`, runID, seq).Scan(&n); err != nil {
		return false, fmt.Errorf("look up sample %d of run %s: %w", seq, runID, err)
	}
	return n > 0, nil
}

// Imported is what Import added to the store.
type Imported struct {
	NewRun   bool // the run was not in the store
	Targets  int  // targets added
	Samples  int  // samples added
	Existing int  // samples the store already held, left as they were
	Finished bool // the run's ending (status, end time, note) was written
}

// Import adds a run read back from a file (an export, or the samples of a run that could not
// reach its store): the run and its targets where the store lacks them, every sample whose
// seq the run does not hold yet, and the run's ending where the stored run has none (it is
// still running, or was marked interrupted because its process ended while it could not
// write). Importing the same file again adds nothing.
func (d *DB) Import(ctx context.Context, r record.Run, targets []record.Target, samples []record.Sample) (Imported, error) {
	var got Imported
	stored, err := d.queryRuns(ctx, `WHERE id = ?`, r.ID)
	if err != nil {
		return got, fmt.Errorf("import run %s: %w", r.ID, err)
	}
	if len(stored) == 0 {
		if err := d.CreateRun(ctx, r); err != nil {
			return got, fmt.Errorf("import: %w", err)
		}
		got.NewRun = true
	}
	have, err := d.Targets(ctx, r.ID)
	if err != nil {
		return got, fmt.Errorf("import run %s: %w", r.ID, err)
	}
	known := map[string]bool{}
	for _, t := range have {
		known[t.Name] = true
	}
	for _, t := range targets {
		if known[t.Name] {
			continue
		}
		t.RunID = r.ID
		if err := d.AddTarget(ctx, t); err != nil {
			return got, fmt.Errorf("import: %w", err)
		}
		known[t.Name] = true
		got.Targets++
	}
	for _, s := range samples {
		s.RunID = r.ID
		ok, err := d.HasSample(ctx, r.ID, s.Seq)
		if err != nil {
			return got, fmt.Errorf("import: %w", err)
		}
		if ok {
			got.Existing++
			continue
		}
		if err := d.AddSample(ctx, s); err != nil {
			return got, fmt.Errorf("import: %w", err)
		}
		got.Samples++
	}
	if len(stored) == 1 && r.Status != record.StatusRunning &&
		(stored[0].Status == record.StatusRunning || stored[0].Interrupted()) {
		if err := d.FinishRun(ctx, r.ID, r.Status, r.Finished, r.Note); err != nil {
			return got, fmt.Errorf("import: %w", err)
		}
		got.Finished = true
	}
	return got, nil
}
