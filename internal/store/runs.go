package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/cnibench/cnibench/internal/record"
)

// runColumns are the columns scanRun reads, in its order.
const runColumns = `id, started, finished, status, suite, seed, version, note, owner`

// CreateRun records a new run. Its ID must be unique (see NewRunID); an empty Status means
// StatusRunning. ID, Suite and Version must be valid UTF-8 without NUL bytes; in Note, such
// bytes are replaced by U+FFFD.
func (d *DB) CreateRun(ctx context.Context, r record.Run) error {
	if r.Status == "" {
		r.Status = record.StatusRunning
	}
	r.Note = cleanText(r.Note)
	if err := validRun(r); err != nil {
		return fmt.Errorf("create run %s: %w", r.ID, err)
	}
	err := inTx(ctx, d.db, func(tx *sql.Tx) error {
		if _, err := d.exec(ctx, tx, `INSERT INTO runs (`+runColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.ID, formatTime(r.Started), nullTime(r.Finished), r.Status, r.Suite, r.Seed, r.Version, r.Note, encodeOwner(r.Owner)); err != nil {
			return err
		}
		for k, v := range r.Labels {
			if _, err := d.exec(ctx, tx, `INSERT INTO run_labels (run_id, key, value) VALUES (?, ?, ?)`, r.ID, k, v); err != nil {
				return fmt.Errorf("label %s: %w", k, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("create run %s: %w", r.ID, err)
	}
	return nil
}

func validRun(r record.Run) error {
	if r.ID == "" {
		return fmt.Errorf("empty id")
	}
	if r.Started.IsZero() {
		return fmt.Errorf("no start time")
	}
	for field, v := range map[string]string{"id": r.ID, "suite": r.Suite, "version": r.Version} {
		if err := checkText(field, v); err != nil {
			return err
		}
	}
	for k, v := range r.Labels {
		if k == "" {
			return fmt.Errorf("a label with an empty key")
		}
		if err := checkText("label "+k, k+v); err != nil {
			return err
		}
	}
	return validStatus(r.Status)
}

func validStatus(s string) error {
	switch s {
	case record.StatusRunning, record.StatusComplete, record.StatusPartial, record.StatusFailed:
		return nil
	}
	return fmt.Errorf("unknown status %q", s)
}

// FinishRun sets the status, end time and note of the run with exactly this id. It may be
// called again, e.g. to turn a partial run into a failed one. NUL bytes and invalid UTF-8 in
// note are replaced by U+FFFD.
func (d *DB) FinishRun(ctx context.Context, id, status string, finished time.Time, note string) error {
	if err := validStatus(status); err != nil {
		return fmt.Errorf("finish run %s: %w", id, err)
	}
	if !storable(id) {
		// No stored id has such bytes; PostgreSQL would fail the query rather than match none.
		return fmt.Errorf("finish run %q: %w", id, ErrNotFound)
	}
	res, err := d.exec(ctx, d.db, `UPDATE runs SET status = ?, finished = ?, note = ? WHERE id = ?`,
		status, nullTime(finished), cleanText(note), id)
	if err != nil {
		return fmt.Errorf("finish run %s: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("finish run %s: %w", id, err)
	} else if n == 0 {
		return fmt.Errorf("finish run %s: %w", id, ErrNotFound)
	}
	return nil
}

// Run returns the run whose id is idOrPrefix or, failing that, the only run whose id starts
// with it. The error wraps ErrNotFound if there is none and ErrAmbiguous if there are several.
func (d *DB) Run(ctx context.Context, idOrPrefix string) (record.Run, error) {
	r, err := d.resolve(ctx, idOrPrefix)
	if err != nil {
		return record.Run{}, fmt.Errorf("run %s: %w", idOrPrefix, err)
	}
	return r, nil
}

// resolve finds a run by exact id, then by unique prefix.
func (d *DB) resolve(ctx context.Context, idOrPrefix string) (record.Run, error) {
	if idOrPrefix == "" {
		return record.Run{}, fmt.Errorf("empty run id: %w", ErrNotFound)
	}
	if !storable(idOrPrefix) {
		// No stored id has such bytes; PostgreSQL would fail the query rather than match none.
		return record.Run{}, ErrNotFound
	}
	runs, err := d.queryRuns(ctx, `WHERE id = ?`, idOrPrefix)
	if err != nil {
		return record.Run{}, err
	}
	if len(runs) == 0 {
		// substr is case-sensitive in both backends, unlike SQLite's LIKE, and needs no
		// escaping. Both count its length in characters, not bytes.
		runs, err = d.queryRuns(ctx, `WHERE substr(id, 1, ?) = ? ORDER BY `+d.dialect.orderText("id")+` LIMIT 3`,
			utf8.RuneCountInString(idOrPrefix), idOrPrefix)
		if err != nil {
			return record.Run{}, err
		}
	}
	switch len(runs) {
	case 0:
		return record.Run{}, ErrNotFound
	case 1:
		return runs[0], nil
	default:
		ids := make([]string, len(runs))
		for i, r := range runs {
			ids[i] = r.ID
		}
		more := ""
		if len(runs) > 2 {
			more = ", ..."
		}
		return record.Run{}, fmt.Errorf("%w: matches %s, %s%s", ErrAmbiguous, ids[0], ids[1], more)
	}
}

// Runs returns every run, newest first.
func (d *DB) Runs(ctx context.Context) ([]record.Run, error) {
	runs, err := d.queryRuns(ctx, `ORDER BY `+d.dialect.orderText("started")+` DESC, `+d.dialect.orderText("id")+` DESC`)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return runs, nil
}

// queryRuns selects the runs matching the where (and order) clause.
func (d *DB) queryRuns(ctx context.Context, where string, args ...any) ([]record.Run, error) {
	rows, err := d.query(ctx, d.db, `SELECT `+runColumns+` FROM runs `+where, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var runs []record.Run
	for rows.Next() {
		var (
			r                 record.Run
			started, finished sql.NullString
			owner             string
		)
		if err := rows.Scan(&r.ID, &started, &finished, &r.Status, &r.Suite, &r.Seed, &r.Version, &r.Note, &owner); err != nil {
			return nil, err
		}
		r.Owner = decodeOwner(owner)
		if r.Started, err = parseTime(started); err != nil {
			return nil, fmt.Errorf("run %s: %w", r.ID, err)
		}
		if r.Finished, err = parseTime(finished); err != nil {
			return nil, fmt.Errorf("run %s: %w", r.ID, err)
		}
		runs = append(runs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close() // SQLite's one connection may be needed for the labels' query
	return runs, d.addLabels(ctx, runs)
}

// addLabels reads the labels of runs: all runs' in one query when there are many.
func (d *DB) addLabels(ctx context.Context, runs []record.Run) error {
	if len(runs) == 0 {
		return nil
	}
	where, args := ``, []any{}
	if len(runs) == 1 {
		where, args = ` WHERE run_id = ?`, []any{runs[0].ID}
	}
	rows, err := d.query(ctx, d.db, `SELECT run_id, key, value FROM run_labels`+where, args...)
	if err != nil {
		return fmt.Errorf("labels: %w", err)
	}
	defer rows.Close()
	byID := make(map[string]*record.Run, len(runs))
	for i := range runs {
		byID[runs[i].ID] = &runs[i]
	}
	for rows.Next() {
		var id, k, v string
		if err := rows.Scan(&id, &k, &v); err != nil {
			return fmt.Errorf("labels: %w", err)
		}
		if r := byID[id]; r != nil {
			if r.Labels == nil {
				r.Labels = map[string]string{}
			}
			r.Labels[k] = v
		}
	}
	return rows.Err()
}

// DeleteRun deletes a run with its targets and samples. Like Run, it accepts a unique prefix.
func (d *DB) DeleteRun(ctx context.Context, idOrPrefix string) error {
	r, err := d.resolve(ctx, idOrPrefix)
	if err != nil {
		return fmt.Errorf("delete run %s: %w", idOrPrefix, err)
	}
	if _, err := d.exec(ctx, d.db, `DELETE FROM runs WHERE id = ?`, r.ID); err != nil {
		return fmt.Errorf("delete run %s: %w", r.ID, err)
	}
	return nil
}

// AddTarget records a target of a run; a run's target names are unique, and must be valid
// UTF-8 without NUL bytes.
func (d *DB) AddTarget(ctx context.Context, t record.Target) error {
	if t.Name == "" {
		return fmt.Errorf("add target to run %s: empty name", t.RunID)
	}
	if err := checkText("name", t.Name); err != nil {
		return fmt.Errorf("add target to run %s: %w", t.RunID, err)
	}
	if err := checkText("run id", t.RunID); err != nil {
		return fmt.Errorf("add target %s: %w", t.Name, err)
	}
	fp := t.Fingerprint
	if fp == nil {
		fp = map[string]string{}
	}
	js, err := json.Marshal(fp)
	if err != nil {
		return fmt.Errorf("add target %s to run %s: encode fingerprint: %w", t.Name, t.RunID, err)
	}
	if _, err := d.exec(ctx, d.db, `INSERT INTO targets (run_id, name, fingerprint) VALUES (?, ?, ?)`,
		t.RunID, t.Name, string(js)); err != nil {
		return fmt.Errorf("add target %s to run %s: %w", t.Name, t.RunID, err)
	}
	return nil
}

// Targets returns the targets of the run with exactly this id, by name.
func (d *DB) Targets(ctx context.Context, runID string) ([]record.Target, error) {
	if !storable(runID) {
		return nil, nil // no such run; PostgreSQL would fail the query rather than match none
	}
	rows, err := d.query(ctx, d.db, `SELECT name, fingerprint FROM targets WHERE run_id = ? ORDER BY `+
		d.dialect.orderText("name"), runID)
	if err != nil {
		return nil, fmt.Errorf("targets of run %s: %w", runID, err)
	}
	defer rows.Close()
	var targets []record.Target
	for rows.Next() {
		t := record.Target{RunID: runID}
		var js string
		if err := rows.Scan(&t.Name, &js); err != nil {
			return nil, fmt.Errorf("targets of run %s: %w", runID, err)
		}
		if err := json.Unmarshal([]byte(js), &t.Fingerprint); err != nil {
			return nil, fmt.Errorf("target %s of run %s: decode fingerprint: %w", t.Name, runID, err)
		}
		if len(t.Fingerprint) == 0 {
			t.Fingerprint = nil
		}
		targets = append(targets, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("targets of run %s: %w", runID, err)
	}
	return targets, nil
}
