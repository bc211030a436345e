package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib" // the database/sql driver
)

// migrationLockKey is the pg_advisory_xact_lock key that serialises migrations. Advisory
// locks belong to the database, so the key only has to differ from those of other
// applications that might share it: it is "cnibench" in ASCII.
const migrationLockKey = 0x636e6962656e6368

// postgresDialect is PostgreSQL's:
//   - $n placeholders;
//   - raw output as BYTEA, because TEXT refuses NUL bytes and invalid UTF-8 and raw output
//     is kept byte for byte (see text.go);
//   - ORDER BY in the "C" collation, which is byte order, as SQLite's BINARY is, whereas the
//     database's default collation (often a language's) would sort "B" after "a";
//   - a transaction-level advisory lock around each migration step: unlike SQLite's
//     BEGIN IMMEDIATE, a PostgreSQL transaction locks nothing up front, and two processes
//     creating the same table at once can fail with a unique violation in the catalog
//     even with IF NOT EXISTS.
func postgresDialect() dialect {
	return dialect{
		backend: "postgres", title: "PostgreSQL", numbered: true,
		rawType: "BYTEA", rawBytes: true,
		collate:       ` COLLATE "C"`,
		migrationLock: fmt.Sprintf(`SELECT pg_advisory_xact_lock(%d)`, migrationLockKey),
	}
}

// connectPostgres opens the PostgreSQL store at location, a postgres:// or postgresql:// URL
// (see Open), and checks that it can be used, without touching its schema.
func connectPostgres(ctx context.Context, location string, readOnly bool) (*DB, error) {
	shown := redactLocation(location)
	cfg, err := pgx.ParseConfig(location)
	if err != nil {
		return nil, fmt.Errorf("open PostgreSQL results store %s: invalid URL: %s", shown, parseConfigReason(err))
	}
	if _, ok := cfg.RuntimeParams["application_name"]; !ok {
		// Shows who is connected in pg_stat_activity.
		cfg.RuntimeParams["application_name"] = "cnibench"
	}
	if readOnly {
		// Every transaction, the implicit one of a lone statement included, refuses writes.
		cfg.RuntimeParams["default_transaction_read_only"] = "on"
	}
	d := &DB{db: stdlib.OpenDB(*cfg), dialect: postgresDialect(), location: shown}
	if err := d.checkPostgres(ctx); err != nil {
		_ = d.db.Close()
		return nil, err
	}
	return d, nil
}

// checkPostgres connects once, so that a wrong address or password fails in Open rather
// than at the first write, and checks the database's encoding: in SQL_ASCII (or LATIN1),
// PostgreSQL would count substr's length in bytes (or refuse characters) and the prefix
// lookup and the text stored would differ from SQLite's.
func (d *DB) checkPostgres(ctx context.Context) error {
	var encoding string
	if err := d.queryRow(ctx, d.db, `SHOW server_encoding`).Scan(&encoding); err != nil {
		return fmt.Errorf("open %s: %w", d.desc(), err)
	}
	if encoding != "UTF8" {
		return fmt.Errorf("open %s: database encoding is %s, want UTF8 (CREATE DATABASE ... ENCODING 'UTF8' TEMPLATE template0)",
			d.desc(), encoding)
	}
	return nil
}

// parseConfigReason is why pgx could not parse a URL, with every quoted fragment of the URL
// left out: pgx masks passwords in what it quotes on a best-effort basis only, and a
// malformed URL can put part of a password anywhere (an unencoded "&" in a password query
// value makes its tail look like a parameter, which pgx then quotes).
func parseConfigReason(err error) string {
	var pce *pgconn.ParseConfigError
	if !errors.As(err, &pce) {
		return "cannot parse it"
	}
	bare := *pce
	bare.ConnString = ""
	reason := strings.TrimPrefix(bare.Error(), "cannot parse ``: ")
	var b strings.Builder
	quote := rune(0)
	for _, r := range reason {
		switch {
		case quote == 0 && (r == '"' || r == '`'):
			quote = r
			b.WriteString(string(r) + "…")
		case r == quote:
			quote = 0
			b.WriteRune(r)
		case quote == 0:
			b.WriteRune(r)
		}
	}
	return b.String()
}
