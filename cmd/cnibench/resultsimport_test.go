package main

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/export"
	"github.com/cnibench/cnibench/internal/store"
)

// TestResultsImport exports a run as JSON and imports it into another store: the run reads
// back as it was exported, and importing the file again adds nothing.
func TestResultsImport(t *testing.T) {
	from := testStore(t)
	file := filepath.Join(t.TempDir(), "run.json")
	mustExecute(t, newResultsCommand(), "export", cmdRun1, "-o", "json", "--file", file, "--store", from)
	to := filepath.Join(t.TempDir(), "other.db")
	out := mustExecute(t, newResultsCommand(), "import", file, "--store", to)
	if want := "run " + cmdRun1 + ": 20 samples added, 0 already stored, 2 targets added, run created\n"; out != want {
		t.Errorf("import: %q, want %q", out, want)
	}
	if out := mustExecute(t, newResultsCommand(), "import", file, "--store", to); !strings.Contains(out, ": 0 samples added, 20 already stored, 0 targets added\n") {
		t.Errorf("import again: %q", out)
	}
	ctx := context.Background()
	load := func(loc string) export.Bundle {
		db, err := store.Open(ctx, loc)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		b, err := export.Load(ctx, db, cmdRun1)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if a, b := load(from), load(to); !reflect.DeepEqual(a, b) {
		t.Errorf("imported run differs from the exported one:\n%+v\n%+v", b.Run, a.Run)
	}
	if _, err := execute(t, newResultsCommand(), "import", filepath.Join(t.TempDir(), "none.json"), "--store", to); err == nil ||
		!strings.Contains(err.Error(), "none.json") {
		t.Errorf("import of a missing file: %v", err)
	}
}
