package store

import (
	"context"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/record"
)

func TestMigrationsNumbered(t *testing.T) {
	sqlite, postgres := migrations(sqliteDialect()), migrations(postgresDialect())
	if len(sqlite) != len(postgres) {
		t.Fatalf("%d SQLite migrations, %d PostgreSQL ones", len(sqlite), len(postgres))
	}
	for i, m := range sqlite {
		if m.version != i+1 || m.name == "" || len(m.stmts) == 0 {
			t.Errorf("migration at %d: version %d, name %q, %d statements", i, m.version, m.name, len(m.stmts))
		}
		if pg := postgres[i]; pg.version != m.version || pg.name != m.name || len(pg.stmts) != len(m.stmts) {
			t.Errorf("migration %d differs between the backends beyond types: %q (%d statements), %q (%d)",
				m.version, m.name, len(m.stmts), pg.name, len(pg.stmts))
		}
	}
}

// stepsOf are the migrations of the backend whose store is at location.
func stepsOf(t *testing.T, location string) []migration {
	t.Helper()
	if strings.HasPrefix(location, "postgres") {
		return migrations(postgresDialect())
	}
	return migrations(sqliteDialect())
}

func TestMigrateOldDatabase(t *testing.T) { forEachBackend(t, testMigrateOldDatabase) }

func testMigrateOldDatabase(t *testing.T, b backend) {
	ctx := context.Background()
	loc := b.location(t)
	steps := stepsOf(t, loc)
	old := openWith(t, loc, steps[:1])
	if v, err := old.schemaVersion(ctx, old.db); err != nil || v != 1 {
		t.Fatalf("old database: version %d, %v", v, err)
	}
	// Data written by a version-1 binary, as it wrote it: no owner, pairs or flags columns yet.
	for _, stmt := range []struct {
		q    string
		args []any
	}{
		{`INSERT INTO runs (id, started, status, suite, seed, version, note) VALUES (?, ?, 'running', '', 1, 'v1', '')`,
			[]any{"r", formatTime(t0())}},
		{`INSERT INTO targets (run_id, name, fingerprint) VALUES (?, 'a', '{}')`, []any{"r"}},
		{`INSERT INTO samples (run_id, seq, round, warmup, target, path, workload, started, duration_ns, raw, error)
			VALUES (?, 0, 0, 0, 'a', '', 'tcp-stream/1', ?, 0, ?, '')`, []any{"r", formatTime(t0()), old.dialect.rawArg("")}},
		{`INSERT INTO metrics (run_id, seq, name, value) VALUES (?, 0, 'throughput_bps', 5e9)`, []any{"r"}},
		{`INSERT INTO resources (run_id, seq, name, value) VALUES (?, 0, 'node_cpu_pct', 30)`, []any{"r"}},
	} {
		if _, err := old.exec(ctx, old.db, stmt.q, stmt.args...); err != nil {
			t.Fatal(err)
		}
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}

	d, err := Open(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if v, err := d.schemaVersion(ctx, d.db); err != nil || v != len(steps) {
		t.Fatalf("upgraded database: version %d, %v; want %d", v, err, len(steps))
	}
	var applied int
	if err := d.queryRow(ctx, d.db, `SELECT COUNT(*) FROM schema_migrations WHERE applied <> ''`).Scan(&applied); err != nil || applied != len(steps) {
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
	if err := d.migrate(ctx, steps); err != nil {
		t.Fatal(err)
	}
	// A run stored without an owner is not taken for a killed one.
	if r, err := d.Run(ctx, "r"); err != nil || r.Owner.Liveness() != record.OwnerUnknown || r.Interrupted() {
		t.Errorf("old run after the upgrade: %+v, %v", r, err)
	}
	if samples, err := d.Samples(ctx, "r"); err != nil || len(samples) != 1 || samples[0].Metrics["throughput_bps"] != 5e9 || samples[0].Pairs != 1 {
		t.Errorf("old sample after the upgrade: %+v, %v", samples, err)
	}
}

func TestMigrateNewerDatabase(t *testing.T) { forEachBackend(t, testMigrateNewerDatabase) }

func testMigrateNewerDatabase(t *testing.T, b backend) {
	ctx := context.Background()
	loc := b.location(t)
	steps := stepsOf(t, loc)
	d := openWith(t, loc, steps)
	if _, err := d.exec(ctx, d.db, `INSERT INTO schema_migrations (version, applied) VALUES (?, ?)`,
		len(steps)+5, formatTime(t0())); err != nil {
		t.Fatal(err)
	}
	shown := d.Location()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := Open(ctx, loc)
	if err == nil || !strings.Contains(err.Error(), "newer than") || !strings.Contains(err.Error(), shown) {
		t.Fatalf("Open(newer schema): err = %v", err)
	}
	checkNoPassword(t, loc, err.Error())
	t.Log(err)
}

func TestMigrateConcurrentOpens(t *testing.T) { forEachBackend(t, testMigrateConcurrentOpens) }

func testMigrateConcurrentOpens(t *testing.T, b backend) {
	ctx := context.Background()
	loc := b.location(t)
	errs := make(chan error, 8)
	for range cap(errs) {
		go func() {
			d, err := Open(ctx, loc)
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
	d, err := connect(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var n, v int
	if err := d.queryRow(ctx, d.db, `SELECT COUNT(*), MAX(version) FROM schema_migrations`).Scan(&n, &v); err != nil {
		t.Fatal(err)
	}
	if want := len(stepsOf(t, loc)); n != want || v != want {
		t.Errorf("schema_migrations: %d rows, version %d; want each step once", n, v)
	}
}

func TestMigrationFailureRollsBack(t *testing.T) { forEachBackend(t, testMigrationFailureRollsBack) }

func testMigrationFailureRollsBack(t *testing.T, b backend) {
	ctx := context.Background()
	loc := b.location(t)
	broken := append(stepsOf(t, loc)[:1:1], migration{version: 2, name: "broken", stmts: []string{
		`CREATE TABLE half (x TEXT)`,
		`CREATE TABLE half (x TEXT)`,
	}})
	d, err := connect(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.migrate(ctx, broken); err == nil || !strings.Contains(err.Error(), "apply migration 2 (broken)") {
		t.Fatalf("broken migration: err = %v", err)
	}
	if v, err := d.schemaVersion(ctx, d.db); err != nil || v != 1 {
		t.Errorf("after broken migration: version %d, %v; want 1", v, err)
	}
	var n int
	if err := d.queryRow(ctx, d.db, b.tableCount, "half").Scan(&n); err != nil || n != 0 {
		t.Errorf("table of the broken migration: %d, %v; want rolled back", n, err)
	}
	if err := d.queryRow(ctx, d.db, b.tableCount, "sample_values").Scan(&n); err != nil || n != 0 {
		t.Errorf("view of migration 2: %d, %v; want none", n, err)
	}
	if err := d.queryRow(ctx, d.db, b.tableCount, "samples").Scan(&n); err != nil || n != 1 {
		t.Errorf("table of migration 1: %d, %v; want it", n, err)
	}
}
