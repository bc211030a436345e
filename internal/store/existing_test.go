package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestOpenExisting(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, loc := range []string{filepath.Join(dir, "missing.db"), dir, dir + "/", "sqlite://" + filepath.Join(dir, "x.db")} {
		if _, err := OpenExisting(ctx, loc); !errors.Is(err, ErrNoStore) {
			t.Errorf("OpenExisting(%q): err = %v, want ErrNoStore", loc, err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("OpenExisting created %v", entries)
	}
	db, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err = OpenExisting(ctx, dir)
	if err != nil {
		t.Fatalf("OpenExisting(existing directory store): %v", err)
	}
	db.Close()
}
