package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
)

// openWith opens a store at path with only the given migration steps applied.
func openWith(t *testing.T, path string, steps []migration) *DB {
	t.Helper()
	ctx := context.Background()
	db, err := sql.Open("sqlite", sqliteDSN(path))
	if err != nil {
		t.Fatal(err)
	}
	d := &DB{db: db, dialect: sqliteDialect(), location: path}
	if err := d.migrate(ctx, steps); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestMigrationsNumbered(t *testing.T) {
	for i, m := range migrations() {
		if m.version != i+1 || m.name == "" || len(m.stmts) == 0 {
			t.Errorf("migration at %d: version %d, name %q, %d statements", i, m.version, m.name, len(m.stmts))
		}
	}
}

func TestMigrateOldDatabase(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "results.db")
	old := openWith(t, path, migrations()[:1])
	if v, err := old.schemaVersion(ctx, old.db); err != nil || v != 1 {
		t.Fatalf("old database: version %d, %v", v, err)
	}
	// Data written by a version-1 binary.
	addRunWithTarget(t, old, "r")
	if err := old.AddSample(ctx, Sample{RunID: "r", Seq: 0, Target: "a", Workload: "tcp-stream/1", Started: t0(),
		Metrics: map[string]float64{"throughput_bps": 5e9}, Resources: map[string]float64{"node_cpu_pct": 30}}); err != nil {
		t.Fatal(err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}

	d, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if v, err := d.schemaVersion(ctx, d.db); err != nil || v != len(migrations()) {
		t.Fatalf("upgraded database: version %d, %v; want %d", v, err, len(migrations()))
	}
	var applied int
	if err := d.queryRow(ctx, d.db, `SELECT COUNT(*) FROM schema_migrations WHERE applied <> ''`).Scan(&applied); err != nil || applied != len(migrations()) {
		t.Errorf("schema_migrations rows: %d, %v", applied, err)
	}
	// Migration 2's view shows the old data.
	rows, err := d.query(ctx, d.db, `SELECT workload, kind, name, value FROM sample_values WHERE run_id = ? ORDER BY kind`, "r")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var w, kind, name string
		var v float64
		if err := rows.Scan(&w, &kind, &name, &v); err != nil {
			t.Fatal(err)
		}
		got = append(got, strings.Join([]string{w, kind, name}, " "))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if want := "tcp-stream/1 metric throughput_bps|tcp-stream/1 resource node_cpu_pct"; strings.Join(got, "|") != want {
		t.Errorf("sample_values = %q, want %q", got, want)
	}
	// Opening again is a no-op.
	if err := d.migrate(ctx, migrations()); err != nil {
		t.Fatal(err)
	}
}

func TestMigrateNewerDatabase(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "results.db")
	d := openWith(t, path, migrations())
	if _, err := d.exec(ctx, d.db, `INSERT INTO schema_migrations (version, applied) VALUES (?, ?)`,
		len(migrations())+5, formatTime(t0())); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := Open(ctx, path)
	if err == nil || !strings.Contains(err.Error(), "newer than") || !strings.Contains(err.Error(), path) {
		t.Fatalf("Open(newer schema): err = %v", err)
	}
	t.Log(err)
}

func TestMigrateConcurrentOpens(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "results.db")
	errs := make(chan error, 4)
	for range cap(errs) {
		go func() {
			d, err := Open(ctx, path)
			if err == nil {
				err = d.Close()
			}
			errs <- err
		}()
	}
	for range cap(errs) {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

func TestMigrationFailureRollsBack(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "results.db")
	broken := append(migrations()[:1:1], migration{version: 2, name: "broken", stmts: []string{
		`CREATE TABLE half (x TEXT)`,
		`CREATE TABLE half (x TEXT)`,
	}})
	db, err := sql.Open("sqlite", sqliteDSN(path))
	if err != nil {
		t.Fatal(err)
	}
	d := &DB{db: db, dialect: sqliteDialect(), location: path}
	defer d.Close()
	if err := d.migrate(ctx, broken); err == nil || !strings.Contains(err.Error(), "apply migration 2 (broken)") {
		t.Fatalf("broken migration: err = %v", err)
	}
	if v, err := d.schemaVersion(ctx, d.db); err != nil || v != 1 {
		t.Errorf("after broken migration: version %d, %v; want 1", v, err)
	}
	var n int
	if err := d.queryRow(ctx, d.db, `SELECT COUNT(*) FROM sqlite_master WHERE name = 'half'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("table of the broken migration: %d, %v; want rolled back", n, err)
	}
}
