package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cnibench/cnibench/internal/record"
)

// encodeOwner is the owner as the runs.owner column holds it: JSON, or empty for none.
func encodeOwner(o record.Owner) string {
	if o.PID == 0 {
		return ""
	}
	b, _ := json.Marshal(o) // a struct of strings and integers always marshals
	return string(b)
}

// decodeOwner reads the runs.owner column.
func decodeOwner(s string) record.Owner {
	var o record.Owner
	if s != "" {
		// A value this code did not write reads as no owner: its liveness is unknown.
		_ = json.Unmarshal([]byte(s), &o)
	}
	return o
}

// MarkInterrupted finds the runs still marked running whose process is gone (killed, or the
// host rebooted) and marks them partial with a note saying so, so that they stop looking
// like runs in progress. Their finished samples stay. It returns the runs it marked.
func (d *DB) MarkInterrupted(ctx context.Context) ([]record.Run, error) {
	running, err := d.queryRuns(ctx, `WHERE status = ?`, record.StatusRunning)
	if err != nil {
		return nil, fmt.Errorf("list running runs: %w", err)
	}
	var marked []record.Run
	for _, r := range running {
		if r.Owner.Liveness() != record.OwnerDead {
			continue
		}
		note := fmt.Sprintf("%s: its process (%s) ended without finishing the run", record.InterruptedNote, r.Owner)
		// The last sample's time is the best estimate of the end the process never wrote.
		end, err := d.lastSampleTime(ctx, r.ID)
		if err != nil {
			return marked, err
		}
		if end.IsZero() {
			end = r.Started
		}
		if err := d.FinishRun(ctx, r.ID, record.StatusPartial, end, note); err != nil {
			return marked, err
		}
		r.Status, r.Note, r.Finished = record.StatusPartial, note, end
		marked = append(marked, r)
	}
	return marked, nil
}

// lastSampleTime is the start of the run's last stored sample, zero if it has none.
// Timestamps are fixed-width text, so MAX orders them in time.
func (d *DB) lastSampleTime(ctx context.Context, runID string) (time.Time, error) {
	var last sql.NullString
	if err := d.queryRow(ctx, d.db, `SELECT MAX(started) FROM samples WHERE run_id = ?`, runID).Scan(&last); err != nil {
		return time.Time{}, fmt.Errorf("last sample of run %s: %w", runID, err)
	}
	return parseTime(last)
}
