package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
)

// sqliteLocked is SQLITE_LOCKED, a table locked by another connection of the same process.
const sqliteLocked = 6

// Transient tells whether a write failed because the store could not be reached or was busy
// for a while (a PostgreSQL server stopped, restarting or unreachable; an SQLite file locked
// by another process past the busy timeout) rather than because of what was written: the
// same write may succeed later. A write that failed this way may still have committed (the
// connection broke after COMMIT was sent), so whoever retries it checks first (HasSample).
func Transient(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// The server answered: only its connection-level refusals are transient (class 08,
		// a shutdown or a start-up in progress, too many connections).
		return strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "57P") || pgErr.Code == "53300"
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		code := se.Code() & 0xff
		return code == sqliteBusy || code == sqliteLocked
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	switch {
	case errors.As(err, &connectErr), errors.As(err, &netErr), pgconn.SafeToRetry(err), pgconn.Timeout(err):
		return true
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, driver.ErrBadConn),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	}
	// pgx reports a connection it closed after an error as "conn closed" without a type.
	return strings.Contains(err.Error(), "conn closed")
}
