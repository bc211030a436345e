package store

import (
	"os"
	"testing"

	"github.com/cnibench/cnibench/internal/testsupport/pgserver"
)

// TestMain runs the package's tests with a real PostgreSQL server (pgserver), except in the
// crash test's and the concurrency test's writers, which are given their database's URL.
func TestMain(m *testing.M) {
	os.Exit(pgserver.Main(m, os.Getenv(crashEnv) == "" && os.Getenv(concurrentEnv) == ""))
}
