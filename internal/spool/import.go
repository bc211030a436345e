package spool

import (
	"context"
	"fmt"
	"os"

	"github.com/cnibench/cnibench/internal/export"
	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/store"
)

// Importer is what importing a file needs of the results store.
type Importer interface {
	Import(ctx context.Context, r record.Run, targets []record.Target, samples []record.Sample) (store.Imported, error)
}

// Import stores the run in a spool file, or in a JSON export (`cnibench results export -o
// json`, the same layout): what the store lacks of it is added, what it holds is left as it
// is (see store.DB.Import), so importing a file twice adds nothing the second time. It
// returns the run's id and what was added.
func Import(ctx context.Context, st Importer, path string) (string, store.Imported, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", store.Imported{}, fmt.Errorf("import: %w", err)
	}
	defer f.Close()
	b, err := export.ReadJSON(f)
	if err != nil {
		return "", store.Imported{}, fmt.Errorf("import %s: %w", path, err)
	}
	got, err := st.Import(ctx, b.Run, b.Targets, b.Samples)
	if err != nil {
		return b.Run.ID, got, fmt.Errorf("import %s: %w", path, err)
	}
	return b.Run.ID, got, nil
}
