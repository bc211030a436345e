// Package store keeps cnibench results: runs, the targets (clusters) each run measured with
// their environment fingerprints, and the samples taken, each with its metrics, resource
// usage and the tool's raw output. Those values are internal/record's, which compiles no
// driver, so that what only reads them (summaries, reports, exports) needs neither backend.
//
// The API is backend-neutral. There are two backends, SQLite (sqlite.go), the default, and
// PostgreSQL (postgres.go), chosen by the location given to Open. They share the schema, its
// migrations and every query, which are kept portable: plain TEXT, BIGINT and DOUBLE
// PRECISION columns, timestamps as fixed-width ISO-8601 UTC text, JSON as TEXT, booleans as
// 0/1 integers, and "?" placeholders that the dialect rewrites. What cannot be portable is
// in the dialect: PostgreSQL's placeholders, the type of the raw-output column, the
// collation of ORDER BY and the lock that serialises migrations.
//
// Both backends store and return the same values. Text that PostgreSQL cannot hold (a NUL
// byte or invalid UTF-8) is refused in ids and names and replaced in messages, in both
// backends alike (text.go); raw tool output is kept byte for byte in both.
//
// Samples are written one by one as they finish. AddSample writes a sample and all of its
// metric and resource rows in one transaction, so a crash or a Ctrl-C never leaves a sample
// half-written and never loses a sample whose AddSample returned. A run that was
// interrupted is marked partial by its caller (FinishRun with record.StatusPartial), which must then
// use a context that is not the one being cancelled; a run whose process was killed stays
// record.StatusRunning.
package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ErrNotFound is returned (wrapped) when no run matches an id or id prefix.
var ErrNotFound = errors.New("not found")

// ErrAmbiguous is returned (wrapped) when an id prefix matches more than one run.
var ErrAmbiguous = errors.New("ambiguous run id prefix")

// NewRunID returns a new run id made of the current UTC time and 16 random bits,
// e.g. "20261121-123456-ab12". Ids sort by start time.
func NewRunID() string {
	var b [2]byte
	_, _ = rand.Read(b[:]) // never fails (Go 1.24+)
	return time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// DefaultPath is where results are kept unless told otherwise:
// $XDG_DATA_HOME/cnibench/results.db, else $HOME/.local/share/cnibench/results.db, else
// cnibench-results.db in the working directory.
func DefaultPath() string {
	// The XDG base directory spec says relative paths are invalid and must be ignored.
	if dir := os.Getenv("XDG_DATA_HOME"); filepath.IsAbs(dir) {
		return filepath.Join(dir, "cnibench", "results.db")
	}
	if home, err := os.UserHomeDir(); err == nil && home != "" {
		return filepath.Join(home, ".local", "share", "cnibench", "results.db")
	}
	return "cnibench-results.db"
}

// EnvStore names the results store when no --store/--results flag does: a file, a directory,
// or a postgres:// URL.
const EnvStore = "CNIBENCH_STORE"

// DefaultLocation is where commands read and write results unless told otherwise.
func DefaultLocation() string {
	if v := os.Getenv(EnvStore); v != "" {
		return v
	}
	return DefaultPath()
}

// DB is an open results store. It is safe for concurrent use.
type DB struct {
	db       *sql.DB
	dialect  dialect
	location string
}

// Open opens (creating if needed) the results store at location and brings its schema up to
// date. location is one of:
//   - a "postgres://" or "postgresql://" URL (libpq syntax, as pgx reads it): a PostgreSQL
//     database, which must exist and use the UTF8 encoding; the schema is created in it;
//   - a file path, a directory (the store is then <dir>/results.db), or a "sqlite://" URL
//     such as "sqlite:///abs/path/results.db": an SQLite database, created with any
//     missing parent directories;
//   - empty, meaning DefaultPath().
//
// Errors name the backend and the location, never a password in it.
func Open(ctx context.Context, location string) (*DB, error) {
	d, err := connect(ctx, location)
	if err != nil {
		return nil, err
	}
	if err := d.migrate(ctx, migrations(d.dialect)); err != nil {
		_ = d.db.Close()
		return nil, err
	}
	return d, nil
}

// connect opens the store at location (see Open) without touching its schema.
func connect(ctx context.Context, location string) (*DB, error) {
	return connectAs(ctx, location, false)
}

// connectAs is connect; readOnly makes every connection refuse writes (OpenReadOnly).
func connectAs(ctx context.Context, location string, readOnly bool) (*DB, error) {
	if location == "" {
		location = DefaultPath()
	}
	scheme, rest, hasScheme := strings.Cut(location, "://")
	if !hasScheme || !isScheme(scheme) {
		return connectSQLite(ctx, location, readOnly)
	}
	switch scheme {
	case "postgres", "postgresql":
		return connectPostgres(ctx, location, readOnly)
	case "sqlite", "sqlite3", "file":
		if rest == "" {
			return nil, fmt.Errorf("open results store %s: no path after %s://", location, scheme)
		}
		return connectSQLite(ctx, rest, readOnly)
	default:
		return nil, fmt.Errorf("open results store %s: unsupported scheme %q (supported: postgres, postgresql, sqlite)",
			redactLocation(location), scheme)
	}
}

// Close closes the store.
func (d *DB) Close() error {
	if err := d.db.Close(); err != nil {
		return fmt.Errorf("close %s: %w", d.desc(), err)
	}
	return nil
}

// Location is where the store is: the SQLite database file's absolute path, or the
// PostgreSQL URL with any password replaced by "xxxxx" (so it is safe to print, but to reopen
// such a store use the location it was opened with).
func (d *DB) Location() string { return d.location }

// Backend names the store's backend: "sqlite" or "postgres".
func (d *DB) Backend() string { return d.dialect.backend }

// desc describes the store for messages, e.g. "SQLite results store /path/results.db": the
// backend is named because a location alone may not make it obvious.
func (d *DB) desc() string { return d.dialect.title + " results store " + d.location }

// dialect holds what differs between SQL backends in the statements this package sends.
type dialect struct {
	backend  string // what Backend returns
	title    string // the backend's name in messages
	numbered bool   // placeholders are $1, $2, ... (PostgreSQL) rather than ?
	// rawType is the column type of samples.raw; rawBytes says whether raw output is bound
	// as bytes (for a binary column) rather than as a string.
	rawType  string
	rawBytes bool
	// collate follows every text expression in ORDER BY, so that both backends sort text
	// by code point (SQLite's BINARY) whatever collation the database was created with.
	collate string
	// migrationLock starts every migration transaction and blocks until no other process
	// is migrating the store; empty when beginning the transaction already does that.
	migrationLock string
}

// orderText is col followed by the dialect's code-point collation, for ORDER BY.
func (dl dialect) orderText(col string) string { return col + dl.collate }

// rawArg is the raw output s as the argument bound to samples.raw.
func (dl dialect) rawArg(s string) any {
	if dl.rawBytes {
		return []byte(s)
	}
	return s
}

// rebind rewrites the "?" placeholders of q for the dialect. The queries of this package
// contain no "?" other than placeholders.
func (dl dialect) rebind(q string) string {
	if !dl.numbered {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// querier is what *sql.DB and *sql.Tx have in common.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func (d *DB) exec(ctx context.Context, q querier, query string, args ...any) (sql.Result, error) {
	return q.ExecContext(ctx, d.dialect.rebind(query), args...)
}

func (d *DB) query(ctx context.Context, q querier, query string, args ...any) (*sql.Rows, error) {
	return q.QueryContext(ctx, d.dialect.rebind(query), args...)
}

func (d *DB) queryRow(ctx context.Context, q querier, query string, args ...any) *sql.Row {
	return q.QueryRowContext(ctx, d.dialect.rebind(query), args...)
}

// inTx runs fn in a transaction, committing if it returns nil and rolling back otherwise.
func inTx(ctx context.Context, db *sql.DB, fn func(*sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback() // the error of fn is the one that matters
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// timeLayout is fixed-width (nanoseconds always written) so that text order is time order.
const timeLayout = "2006-01-02T15:04:05.000000000Z"

// formatTime renders t as ISO-8601 UTC text.
func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

// nullTime is formatTime, or NULL for the zero time.
func nullTime(t time.Time) sql.NullString {
	if t.IsZero() {
		return sql.NullString{}
	}
	return sql.NullString{String: formatTime(t), Valid: true}
}

// parseTime reads a stored timestamp; NULL or empty gives the zero time.
func parseTime(s sql.NullString) (time.Time, error) {
	if !s.Valid || s.String == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s.String)
	if err != nil {
		return time.Time{}, fmt.Errorf("parse timestamp %q: %w", s.String, err)
	}
	return t.UTC(), nil
}
