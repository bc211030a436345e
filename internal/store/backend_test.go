package store

import (
	"context"
	"github.com/cnibench/cnibench/internal/testsupport/pgserver"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/record"
)

// backend is one of the store's backends as the shared behavioural tests see it: the tests
// are written once, against the API and portable SQL, and run for every backend
// (forEachBackend); what they need that is not portable is here.
type backend struct {
	name string
	// location returns the location of a new, empty store that is removed when the test
	// ends. It ends the test if the backend is not available (see pgserver.Require).
	location func(t *testing.T) string
	// failTrigger makes the database refuse to insert a resource named 'zzz', with an
	// error saying "refused by test trigger"; dropTrigger undoes it.
	failTrigger, dropTrigger []string
	// tableCount counts the tables or views named by its one placeholder.
	tableCount string
	// afterKill is called on a reopened store after its writer was SIGKILLed: it waits
	// until the backend has finished with the writer and checks the database's integrity.
	afterKill func(t *testing.T, d *DB)
	// writerLocation is the location the crash test's writer opens the store at loc by.
	writerLocation func(loc string) string
}

// backends are the store's backends.
func backends() []backend { return []backend{sqliteBackend(), postgresBackend()} }

// forEachBackend runs test as a parallel subtest for each backend.
func forEachBackend(t *testing.T, test func(t *testing.T, b backend)) {
	t.Helper()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			test(t, b)
		})
	}
}

func sqliteBackend() backend {
	return backend{
		name:     "sqlite",
		location: func(t *testing.T) string { return filepath.Join(t.TempDir(), "results.db") },
		failTrigger: []string{`CREATE TRIGGER fail_zzz BEFORE INSERT ON resources
			WHEN NEW.name = 'zzz' BEGIN SELECT RAISE(ABORT, 'refused by test trigger'); END`},
		dropTrigger: []string{`DROP TRIGGER fail_zzz`},
		tableCount:  `SELECT COUNT(*) FROM sqlite_master WHERE name = ?`,
		afterKill: func(t *testing.T, d *DB) {
			t.Helper()
			ctx := context.Background()
			var integrity string
			if err := d.queryRow(ctx, d.db, `PRAGMA integrity_check`).Scan(&integrity); err != nil || integrity != "ok" {
				t.Fatalf("integrity_check: %q, %v", integrity, err)
			}
			rows, err := d.query(ctx, d.db, `PRAGMA foreign_key_check`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			if rows.Next() {
				t.Error("foreign_key_check reports violations")
			}
		},
		writerLocation: func(loc string) string { return loc },
	}
}

// crashWriterApp is the application_name of the crash test's writer in PostgreSQL, by which
// afterKill finds its server process.
const crashWriterApp = "cnibench-crash-writer"

func postgresBackend() backend {
	return backend{
		name:     "postgres",
		location: func(t *testing.T) string { return pgserver.NewDatabase(t) },
		failTrigger: []string{
			`CREATE FUNCTION fail_zzz() RETURNS trigger LANGUAGE plpgsql AS $$
				BEGIN RAISE EXCEPTION 'refused by test trigger'; END $$`,
			`CREATE TRIGGER fail_zzz BEFORE INSERT ON resources
				FOR EACH ROW WHEN (NEW.name = 'zzz') EXECUTE FUNCTION fail_zzz()`,
		},
		dropTrigger: []string{`DROP TRIGGER fail_zzz ON resources`, `DROP FUNCTION fail_zzz()`},
		tableCount: `SELECT COUNT(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = current_schema() AND c.relname = ?`,
		afterKill: func(t *testing.T, d *DB) {
			t.Helper()
			// The server notices the dead client when it next reads from its socket and
			// then rolls back its transaction. Until then, a transaction whose COMMIT had
			// arrived could still become visible; wait, so the count is final.
			ctx := context.Background()
			deadline := time.Now().Add(10 * time.Second)
			for {
				var n int
				if err := d.queryRow(ctx, d.db, `SELECT COUNT(*) FROM pg_stat_activity
					WHERE datname = current_database() AND application_name = ?`, crashWriterApp).Scan(&n); err != nil {
					t.Fatal(err)
				}
				if n == 0 {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("the killed writer's server process is still there after 10s")
				}
				time.Sleep(10 * time.Millisecond)
			}
		},
		writerLocation: func(loc string) string {
			u, err := url.Parse(loc)
			if err != nil {
				panic("test database URL does not parse") // pgserver.NewDatabase built it
			}
			q := u.Query()
			q.Set("application_name", crashWriterApp)
			u.RawQuery = q.Encode()
			return u.String()
		},
	}
}

// openTest opens a new store of the backend and closes it when the test ends.
func openTest(t *testing.T, b backend) *DB {
	t.Helper()
	d, err := Open(context.Background(), b.location(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// openWith opens the store at location with only the given migration steps applied.
func openWith(t *testing.T, location string, steps []migration) *DB {
	t.Helper()
	ctx := context.Background()
	d, err := connect(ctx, location)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.migrate(ctx, steps); err != nil {
		_ = d.Close()
		t.Fatal(err)
	}
	return d
}

// t0 is a fixed time with nanoseconds and a non-UTC zone, to check both survive.
func t0() time.Time {
	return time.Date(2026, 11, 21, 12, 34, 56, 123456789, time.FixedZone("CET", 3600))
}

func testRun(id string, started time.Time) record.Run {
	return record.Run{ID: id, Started: started, Status: record.StatusRunning, Suite: "suite: x\n", Seed: -42, Version: "v0.1.0"}
}

// addRunWithTarget creates a run with one target named "a".
func addRunWithTarget(t *testing.T, d *DB, id string) {
	t.Helper()
	ctx := context.Background()
	if err := d.CreateRun(ctx, testRun(id, t0())); err != nil {
		t.Fatal(err)
	}
	if err := d.AddTarget(ctx, record.Target{RunID: id, Name: "a"}); err != nil {
		t.Fatal(err)
	}
}

// execAll runs statements on the store, which must succeed.
func execAll(t *testing.T, d *DB, stmts []string) {
	t.Helper()
	for _, stmt := range stmts {
		if _, err := d.exec(context.Background(), d.db, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
}
