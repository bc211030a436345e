package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// sqliteFile is the database's name inside a directory given as location.
const sqliteFile = "results.db"

// sqliteDialect is SQLite's: "?" placeholders, raw output as TEXT (which holds any bytes, so
// the released schema needs no change), BINARY collation already, and no migration lock
// statement because _txlock=immediate makes every transaction take the write lock at BEGIN.
func sqliteDialect() dialect {
	return dialect{backend: "sqlite", title: "SQLite", rawType: "TEXT"}
}

// sqliteParams are the connection settings, applied by the driver to every pooled connection
// (foreign_keys, for one, is per connection):
//   - WAL: readers do not block the writer, and a killed writer leaves a log that the next
//     open rolls forward to the last commit, dropping any unfinished transaction.
//   - synchronous=FULL: a commit is on disk before AddSample returns, so a finished sample
//     survives even power loss; samples are seconds apart, so the fsync costs nothing.
//   - busy_timeout: wait up to 5 s for another process's write instead of failing.
//   - _txlock=immediate: transactions take the write lock at BEGIN, so two writers queue on
//     busy_timeout rather than one failing at once on a read-to-write upgrade.
func sqliteParams() url.Values {
	return url.Values{
		"_busy_timeout": {"5000"},
		"_foreign_keys": {"1"},
		"_journal_mode": {"WAL"},
		"_synchronous":  {"FULL"},
		"_txlock":       {"immediate"},
	}
}

// sqlitePath resolves location to the database file's absolute path: an existing directory,
// or a path ending in a separator, means results.db inside it.
func sqlitePath(location string) (string, error) {
	p := location
	if strings.HasSuffix(p, "/") || strings.HasSuffix(p, string(filepath.Separator)) {
		p = filepath.Join(p, sqliteFile)
	} else if fi, err := os.Stat(p); err == nil && fi.IsDir() {
		p = filepath.Join(p, sqliteFile)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("stat %s: %w", p, err)
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("absolute path of %s: %w", p, err)
	}
	return abs, nil
}

// sqliteDSN is the driver's data source name for the file at abs: a "file:" URI, so that any
// character of the path (such as "?" or "#") is escaped rather than taken as syntax.
func sqliteDSN(abs string, readOnly bool) string {
	params := sqliteParams()
	if readOnly {
		// query_only refuses every write; a deferred BEGIN takes no write lock, which an
		// immediate one would, holding up the writer of a run.
		params.Set("_query_only", "1")
		params.Set("_txlock", "deferred")
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: params.Encode()}
	return u.String()
}

// connectSQLite opens the SQLite store at location (a path; see Open), creating the file
// and its directory if needed, without touching its schema.
func connectSQLite(ctx context.Context, location string, readOnly bool) (*DB, error) {
	path, err := sqlitePath(location)
	if err != nil {
		return nil, fmt.Errorf("open SQLite results store %q: %w", location, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("open SQLite results store %s: create directory: %w", path, err)
	}
	db, err := sql.Open("sqlite", sqliteDSN(path, readOnly))
	if err != nil {
		return nil, fmt.Errorf("open SQLite results store %s: %w", path, err)
	}
	d := &DB{db: db, dialect: sqliteDialect(), location: path}
	if err := d.checkRetrying(ctx); err != nil {
		_ = db.Close()
		return nil, err
	}
	return d, nil
}

// sqliteBusy is SQLITE_BUSY, the primary result code of "database is locked".
const sqliteBusy = 5

// checkRetrying is check, retried for up to the busy timeout while the database is locked:
// switching a new database to WAL can fail at once, without waiting, when another process
// is opening it at the same moment.
func (d *DB) checkRetrying(ctx context.Context) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := d.check(ctx)
		var se *sqlite.Error
		if err == nil || !errors.As(err, &se) || se.Code()&0xff != sqliteBusy || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("open %s: %w", d.desc(), ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// check connects once and verifies that the settings took: a file that is not an SQLite
// database fails here, and a file system without shared memory (WAL needs it) would
// silently keep another journal mode.
func (d *DB) check(ctx context.Context) error {
	var mode string
	if err := d.queryRow(ctx, d.db, `PRAGMA journal_mode`).Scan(&mode); err != nil {
		return fmt.Errorf("open %s: %w", d.desc(), err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("open %s: journal mode is %q, want wal", d.desc(), mode)
	}
	var fk int
	if err := d.queryRow(ctx, d.db, `PRAGMA foreign_keys`).Scan(&fk); err != nil {
		return fmt.Errorf("open %s: read foreign_keys: %w", d.desc(), err)
	}
	if fk != 1 {
		return fmt.Errorf("open %s: foreign keys are off", d.desc())
	}
	return nil
}
