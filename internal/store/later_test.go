package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/record"
)

// TestLaterSeesTheStoreOnceItExists checks a store read before the first run: no runs and no
// file made while it does not exist, then the runs of the store a writer creates, without
// reopening; a location that cannot be a store is refused at once.
func TestLaterSeesTheStoreOnceItExists(t *testing.T) {
	ctx := context.Background()
	loc := filepath.Join(t.TempDir(), "results.db")
	l, err := OpenLater(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if runs, err := l.Runs(ctx); err != nil || len(runs) != 0 {
		t.Fatalf("Runs before the store exists = %v, %v; want none", runs, err)
	}
	if _, err := os.Stat(loc); !os.IsNotExist(err) {
		t.Fatalf("reading made the store: %v", err)
	}
	w, err := Open(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.CreateRun(ctx, record.Run{ID: "later-1", Started: time.Now(), Status: record.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	runs, err := l.Runs(ctx)
	if err != nil || len(runs) != 1 || runs[0].ID != "later-1" {
		t.Fatalf("Runs once the store exists = %v, %v; want later-1", runs, err)
	}
	if _, err := l.Targets(ctx, "later-1"); err != nil {
		t.Errorf("Targets: %v", err)
	}
	if err := l.db.CreateRun(ctx, record.Run{ID: "later-2", Started: time.Now(), Status: record.StatusRunning}); err == nil {
		t.Error("the store it opened takes writes")
	}
	bad := filepath.Join(t.TempDir(), "not-a-store.db")
	if err := os.WriteFile(bad, []byte("not a database"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenLater(ctx, bad); err == nil {
		t.Error("OpenLater of a file that is no store succeeded")
	}
}
