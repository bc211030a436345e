package store

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/record"
)

// The tables holding a sample's named values, one row per value.
const (
	metricsTable   = "metrics"
	resourcesTable = "resources"
)

// AddSample stores a sample: its row, its metrics and its resources commit together in one
// transaction or not at all. The run and the sample's target must exist, and Seq must be new
// within the run. Metric and resource names must be non-empty and values finite. The text
// fields other than Raw and Error must be valid UTF-8 without NUL bytes; Raw is stored byte
// for byte, while in Error such bytes are replaced by U+FFFD.
func (d *DB) AddSample(ctx context.Context, s record.Sample) error {
	if err := validSample(s); err != nil {
		return fmt.Errorf("add sample %d of run %s: %w", s.Seq, s.RunID, err)
	}
	warmup := 0
	if s.Warmup {
		warmup = 1
	}
	err := inTx(ctx, d.db, func(tx *sql.Tx) error {
		if _, err := d.exec(ctx, tx, `INSERT INTO samples
			(run_id, seq, round, warmup, target, path, workload, pairs, flags, started, duration_ns, raw, error, profile)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			s.RunID, s.Seq, s.Round, warmup, s.Target, s.Path, s.Workload, max(s.Pairs, 1), strings.Join(s.Flags, ","),
			formatTime(s.Started), s.Duration.Nanoseconds(), d.dialect.rawArg(s.Raw), cleanText(s.Error), cleanText(s.Profile)); err != nil {
			return err
		}
		if err := d.insertValues(ctx, tx, metricsTable, s, s.Metrics); err != nil {
			return err
		}
		return d.insertValues(ctx, tx, resourcesTable, s, s.Resources)
	})
	if err != nil {
		return fmt.Errorf("add sample %d of run %s: %w", s.Seq, s.RunID, err)
	}
	return nil
}

// insertValues writes one row of table per value, in name order.
func (d *DB) insertValues(ctx context.Context, tx *sql.Tx, table string, s record.Sample, values map[string]float64) error {
	if len(values) == 0 {
		return nil
	}
	stmt, err := tx.PrepareContext(ctx, d.dialect.rebind(
		`INSERT INTO `+table+` (run_id, seq, name, value) VALUES (?, ?, ?, ?)`))
	if err != nil {
		return fmt.Errorf("prepare %s insert: %w", table, err)
	}
	defer stmt.Close()
	for _, name := range sortedKeys(values) {
		v := values[name]
		if v == 0 {
			// -0 becomes 0: SQLite stores a REAL without a fraction as an integer, which
			// loses the sign, and PostgreSQL would keep it, so the backends would differ.
			v = 0
		}
		if _, err := stmt.ExecContext(ctx, s.RunID, s.Seq, name, v); err != nil {
			return fmt.Errorf("insert %s %q: %w", table, name, err)
		}
	}
	return nil
}

func validSample(s record.Sample) error {
	switch {
	case s.RunID == "":
		return fmt.Errorf("empty run id")
	case s.Seq < 0:
		return fmt.Errorf("negative seq")
	case s.Target == "":
		return fmt.Errorf("empty target")
	case s.Pairs < 0:
		return fmt.Errorf("negative pairs")
	}
	for _, f := range s.Flags {
		if f == "" || strings.Contains(f, ",") {
			return fmt.Errorf("flag %q: expected a non-empty word without commas", f)
		}
		if err := checkText("flag", f); err != nil {
			return err
		}
	}
	for field, v := range map[string]string{"run id": s.RunID, "target": s.Target, "path": s.Path, "workload": s.Workload} {
		if err := checkText(field, v); err != nil {
			return err
		}
	}
	for table, values := range map[string]map[string]float64{metricsTable: s.Metrics, resourcesTable: s.Resources} {
		for name, v := range values {
			if name == "" {
				return fmt.Errorf("%s: empty name", table)
			}
			if err := checkText(table+" name", name); err != nil {
				return err
			}
			// NaN is NULL to SQLite and not valid JSON; a failed measurement is an Error.
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("%s %q: value %v is not finite", table, name, v)
			}
		}
	}
	return nil
}

func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Samples returns the samples of the run with exactly this id, in Seq order.
func (d *DB) Samples(ctx context.Context, runID string) ([]record.Sample, error) {
	if !storable(runID) {
		return nil, nil // no such run; PostgreSQL would fail the query rather than match none
	}
	samples, err := d.querySamples(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("samples of run %s: %w", runID, err)
	}
	bySeq := make(map[int]*record.Sample, len(samples))
	for i := range samples {
		bySeq[samples[i].Seq] = &samples[i]
	}
	// Sample rows never change once committed together with their values, so values read
	// after the rows are complete for every row; values of samples added in between are
	// skipped.
	for _, table := range []string{metricsTable, resourcesTable} {
		err := d.queryValues(ctx, table, runID, func(seq int, name string, v float64) {
			s := bySeq[seq]
			if s == nil {
				return
			}
			m := &s.Metrics
			if table == resourcesTable {
				m = &s.Resources
			}
			if *m == nil {
				*m = map[string]float64{}
			}
			(*m)[name] = v
		})
		if err != nil {
			return nil, fmt.Errorf("samples of run %s: %w", runID, err)
		}
	}
	return samples, nil
}

func (d *DB) querySamples(ctx context.Context, runID string) ([]record.Sample, error) {
	rows, err := d.query(ctx, d.db, `SELECT seq, round, warmup, target, path, workload, pairs, flags, started, duration_ns, raw, error, profile
		FROM samples WHERE run_id = ? ORDER BY seq`, runID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var samples []record.Sample
	for rows.Next() {
		s := record.Sample{RunID: runID}
		var (
			warmup, durationNS int64
			started, flags     sql.NullString
			raw                []byte // TEXT in SQLite, BYTEA in PostgreSQL: both scan as bytes
		)
		if err := rows.Scan(&s.Seq, &s.Round, &warmup, &s.Target, &s.Path, &s.Workload, &s.Pairs, &flags,
			&started, &durationNS, &raw, &s.Error, &s.Profile); err != nil {
			return nil, err
		}
		s.Raw = string(raw)
		if flags.String != "" {
			s.Flags = strings.Split(flags.String, ",")
		}
		s.Warmup = warmup != 0
		s.Duration = time.Duration(durationNS)
		if s.Started, err = parseTime(started); err != nil {
			return nil, fmt.Errorf("sample %d: %w", s.Seq, err)
		}
		samples = append(samples, s)
	}
	return samples, rows.Err()
}

// queryValues calls fn for each row of table belonging to the run.
func (d *DB) queryValues(ctx context.Context, table, runID string, fn func(seq int, name string, v float64)) error {
	rows, err := d.query(ctx, d.db, `SELECT seq, name, value FROM `+table+` WHERE run_id = ?`, runID)
	if err != nil {
		return fmt.Errorf("read %s: %w", table, err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			seq  int
			name string
			v    float64
		)
		if err := rows.Scan(&seq, &name, &v); err != nil {
			return fmt.Errorf("read %s: %w", table, err)
		}
		fn(seq, name, v)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read %s: %w", table, err)
	}
	return nil
}
