// Package aarun gives tests the real A/A run of the default suite that the gate's calibration
// was measured on: two identical two-node bridge clusters, the default suite's 20 cells, 7
// rounds, exported with each sample's raw output blanked (internal/compare/testdata). It is
// test support: nothing in the cnibench binary uses it.
package aarun

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/cnibench/cnibench/internal/export"
)

// Path is the export's file, wherever the calling test's package is.
func Path() string {
	_, self, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(self), "..", "..", "compare", "testdata", "aa-default-suite.json")
}

// Load reads the run.
func Load(t testing.TB) export.Bundle {
	t.Helper()
	f, err := os.Open(Path())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := export.ReadJSON(f)
	if err != nil {
		t.Fatalf("read %s: %v", Path(), err)
	}
	return b
}
