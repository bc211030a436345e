package store

import (
	"os"
	"testing"

	"github.com/cnibench/cnibench/internal/testsupport/pgserver"
)

// TestMain runs the package's tests with a real PostgreSQL server (pgserver), except in the
// crash test's writer, which is given its database's URL.
func TestMain(m *testing.M) {
	os.Exit(pgserver.Main(m, os.Getenv(crashEnv) == ""))
}
