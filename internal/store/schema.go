package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// migration is one step of the schema's history. Steps are applied in order, each in its own
// transaction together with its row in schema_migrations, and are never edited once
// released: a change to the schema is a new step.
type migration struct {
	version int
	name    string
	stmts   []string
}

// Schema notes, for both backends:
//   - Column types are the portable subset: TEXT, BIGINT (64-bit in PostgreSQL, INTEGER
//     affinity in SQLite) and DOUBLE PRECISION (PostgreSQL's REAL is only 32-bit). The one
//     exception is samples.raw, the tool's raw output, which is TEXT in SQLite and BYTEA in
//     PostgreSQL, whose TEXT refuses NUL bytes and invalid UTF-8 (see text.go); in SQL,
//     convert_from(raw, 'UTF8') or encode(raw, 'escape') reads it as text there.
//   - Timestamps are ISO-8601 UTC text of fixed width (see timeLayout), so they sort.
//   - Metrics and resources are normalised into one row per value rather than kept as a
//     JSON column: plain SQL (and Grafana) can then select, filter and aggregate them in
//     either backend without the JSON functions, which differ between SQLite and
//     PostgreSQL; a single copy also cannot disagree with itself. The typed API reassembles
//     the maps. Fingerprints are written once and read whole, so they are a JSON object.
//   - Deleting a run cascades to its targets, samples, metrics and resources.
//
// migrations returns the schema's steps for the dialect, oldest first; versions are 1, 2, 3,
// ... and the same for every dialect.
func migrations(dl dialect) []migration {
	return []migration{
		{
			version: 1,
			name:    "runs, targets, samples, metrics and resources",
			stmts: []string{
				`CREATE TABLE runs (
					id       TEXT PRIMARY KEY,
					started  TEXT NOT NULL,
					finished TEXT,
					status   TEXT NOT NULL CHECK (status IN ('running', 'complete', 'partial', 'failed')),
					suite    TEXT NOT NULL,
					seed     BIGINT NOT NULL,
					version  TEXT NOT NULL,
					note     TEXT NOT NULL
				)`,
				`CREATE TABLE targets (
					run_id      TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
					name        TEXT NOT NULL,
					fingerprint TEXT NOT NULL,
					PRIMARY KEY (run_id, name)
				)`,
				`CREATE TABLE samples (
					run_id      TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
					seq         BIGINT NOT NULL,
					round       BIGINT NOT NULL,
					warmup      BIGINT NOT NULL CHECK (warmup IN (0, 1)),
					target      TEXT NOT NULL,
					path        TEXT NOT NULL,
					workload    TEXT NOT NULL,
					started     TEXT NOT NULL,
					duration_ns BIGINT NOT NULL,
					raw         ` + dl.rawType + ` NOT NULL,
					error       TEXT NOT NULL,
					PRIMARY KEY (run_id, seq),
					FOREIGN KEY (run_id, target) REFERENCES targets (run_id, name) ON DELETE CASCADE
				)`,
				`CREATE TABLE metrics (
					run_id TEXT NOT NULL,
					seq    BIGINT NOT NULL,
					name   TEXT NOT NULL CHECK (name <> ''),
					value  DOUBLE PRECISION NOT NULL,
					PRIMARY KEY (run_id, seq, name),
					FOREIGN KEY (run_id, seq) REFERENCES samples (run_id, seq) ON DELETE CASCADE
				)`,
				`CREATE TABLE resources (
					run_id TEXT NOT NULL,
					seq    BIGINT NOT NULL,
					name   TEXT NOT NULL CHECK (name <> ''),
					value  DOUBLE PRECISION NOT NULL,
					PRIMARY KEY (run_id, seq, name),
					FOREIGN KEY (run_id, seq) REFERENCES samples (run_id, seq) ON DELETE CASCADE
				)`,
			},
		},
		{
			version: 2,
			name:    "indexes and the sample_values view",
			stmts: []string{
				`CREATE INDEX runs_started ON runs (started)`,
				`CREATE INDEX samples_target ON samples (run_id, target)`,
				`CREATE INDEX metrics_name ON metrics (name)`,
				`CREATE INDEX resources_name ON resources (name)`,
				// One row per value with the sample's coordinates, for SQL users and Grafana.
				`CREATE VIEW sample_values AS
					SELECT s.run_id, s.seq, s.round, s.warmup, s.target, s.path, s.workload,
						s.started, 'metric' AS kind, m.name, m.value
					FROM samples s JOIN metrics m ON m.run_id = s.run_id AND m.seq = s.seq
					UNION ALL
					SELECT s.run_id, s.seq, s.round, s.warmup, s.target, s.path, s.workload,
						s.started, 'resource' AS kind, r.name, r.value
					FROM samples s JOIN resources r ON r.run_id = s.run_id AND r.seq = s.seq`,
			},
		},
		{
			version: 3,
			name:    "pairs and flags of a sample",
			stmts: []string{
				// Concurrency is a dimension of the matrix like target and path; samples of
				// earlier versions had one pair.
				`ALTER TABLE samples ADD COLUMN pairs BIGINT NOT NULL DEFAULT 1 CHECK (pairs >= 1)`,
				// Comma-separated conditions that make a sample suspect (e.g. start skew).
				`ALTER TABLE samples ADD COLUMN flags TEXT NOT NULL DEFAULT ''`,
				`DROP VIEW sample_values`,
				`CREATE VIEW sample_values AS
					SELECT s.run_id, s.seq, s.round, s.warmup, s.target, s.path, s.workload, s.pairs,
						s.started, 'metric' AS kind, m.name, m.value
					FROM samples s JOIN metrics m ON m.run_id = s.run_id AND m.seq = s.seq
					UNION ALL
					SELECT s.run_id, s.seq, s.round, s.warmup, s.target, s.path, s.workload, s.pairs,
						s.started, 'resource' AS kind, r.name, r.value
					FROM samples s JOIN resources r ON r.run_id = s.run_id AND r.seq = s.seq`,
			},
		},
		{
			version: 4,
			name:    "the process writing a run",
			stmts: []string{
				// Host, boot id, pid and process start time as JSON (record.Owner): a run whose
				// process is gone without finishing it was killed.
				`ALTER TABLE runs ADD COLUMN owner TEXT NOT NULL DEFAULT ''`,
			},
		},
		{
			version: 5,
			name:    "CPU profiles of samples",
			stmts: []string{
				// Folded stacks of the host's CPUs during the sample's measured window.
				`ALTER TABLE samples ADD COLUMN profile TEXT NOT NULL DEFAULT ''`,
			},
		},
		{
			version: 6,
			name:    "labels of a run",
			stmts: []string{
				// key=value pairs a CI stores with a run (commit, branch, CNI version,
				// kernel), to select runs by; one row each, so SQL and Grafana filter on them.
				`CREATE TABLE run_labels (
					run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
					key    TEXT NOT NULL CHECK (key <> ''),
					value  TEXT NOT NULL,
					PRIMARY KEY (run_id, key)
				)`,
				`CREATE INDEX run_labels_key ON run_labels (key, value)`,
			},
		},
		{
			version: 7,
			name:    "per-cell summaries for SQL users and Grafana",
			stmts:   []string{cellValuesView, cellSummariesView},
		},
	}
}

// migrate brings the schema up to the last of steps. A database whose schema is newer than
// steps is an error, so that an old binary never writes to a schema it does not know.
//
// Several processes may open a store at once, so every step runs in a transaction that
// first waits for any other migrator (SQLite: BEGIN IMMEDIATE takes the database's write
// lock; PostgreSQL: the dialect's transaction-level advisory lock, released by the commit
// or rollback) and then checks again whether the step is still to do.
func (d *DB) migrate(ctx context.Context, steps []migration) error {
	for i, step := range steps {
		if step.version != i+1 {
			return fmt.Errorf("migration %d (%s) is listed at position %d", step.version, step.name, i+1)
		}
	}
	latest := len(steps)
	// Reading first keeps an up-to-date store free of DDL and locks, which also lets a user
	// who may read but not create tables (PostgreSQL) open it.
	current, err := d.schemaVersion(ctx, d.db)
	if err != nil {
		// Most likely a new database without schema_migrations; any other cause fails again
		// below, with the error that matters.
		if err := d.lockedTx(ctx, func(tx *sql.Tx) error {
			_, err := d.exec(ctx, tx, `CREATE TABLE IF NOT EXISTS schema_migrations (
				version INTEGER PRIMARY KEY,
				applied TEXT NOT NULL
			)`)
			return err
		}); err != nil {
			return fmt.Errorf("create schema_migrations in %s: %w", d.desc(), err)
		}
		if current, err = d.schemaVersion(ctx, d.db); err != nil {
			return err
		}
	}
	if current > latest {
		return fmt.Errorf("%s has schema version %d, newer than the %d this cnibench knows: use a newer cnibench",
			d.desc(), current, latest)
	}
	for _, step := range steps {
		if step.version <= current {
			continue
		}
		err := d.lockedTx(ctx, func(tx *sql.Tx) error {
			// Another process may have applied the step since we looked.
			v, err := d.schemaVersion(ctx, tx)
			if err != nil || v >= step.version {
				return err
			}
			for _, stmt := range step.stmts {
				if _, err := d.exec(ctx, tx, stmt); err != nil {
					return err
				}
			}
			_, err = d.exec(ctx, tx, `INSERT INTO schema_migrations (version, applied) VALUES (?, ?)`,
				step.version, formatTime(time.Now()))
			return err
		})
		if err != nil {
			return fmt.Errorf("apply migration %d (%s) to %s: %w", step.version, step.name, d.desc(), err)
		}
	}
	return nil
}

// lockedTx runs fn in a transaction that holds the migration lock (see migrate).
func (d *DB) lockedTx(ctx context.Context, fn func(*sql.Tx) error) error {
	return inTx(ctx, d.db, func(tx *sql.Tx) error {
		if d.dialect.migrationLock != "" {
			if _, err := d.exec(ctx, tx, d.dialect.migrationLock); err != nil {
				return fmt.Errorf("take the migration lock: %w", err)
			}
		}
		return fn(tx)
	})
}

// schemaVersion is the highest applied migration, 0 for a new database.
func (d *DB) schemaVersion(ctx context.Context, q querier) (int, error) {
	var v sql.NullInt64
	if err := d.queryRow(ctx, q, `SELECT MAX(version) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, fmt.Errorf("read schema version of %s: %w", d.desc(), err)
	}
	return int(v.Int64), nil
}
