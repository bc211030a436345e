package store

import (
	"context"
	"errors"
	"sync"

	"github.com/cnibench/cnibench/internal/record"
)

// Later is a store to read that may not exist yet: a SQLite file that the first run will
// create. Each read opens it read-only (OpenReadOnly) until that succeeds; until the store
// exists, it holds no runs. `cnibench serve` started before the first run shows an empty list,
// then the runs, without a restart.
type Later struct {
	location string
	mu       sync.Mutex
	db       *DB // once opened
}

// OpenLater returns the store at location (see Open), opened read-only now if it exists, else
// at the first read after it does. Any other failure to open it is returned now.
func OpenLater(ctx context.Context, location string) (*Later, error) {
	if location == "" {
		location = DefaultLocation()
	}
	l := &Later{location: location}
	if _, err := l.open(ctx); err != nil && !errors.Is(err, ErrNoStore) {
		return nil, err
	}
	return l, nil
}

// open returns the store, opening it if it exists and was not opened yet.
func (l *Later) open(ctx context.Context) (*DB, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.db != nil {
		return l.db, nil
	}
	db, err := OpenReadOnly(ctx, l.location)
	if err != nil {
		return nil, err
	}
	l.db = db
	return db, nil
}

// Location is the store's location, its password hidden.
func (l *Later) Location() string { return redactLocation(l.location) }

// Runs lists the stored runs (see DB.Runs): none while the store does not exist.
func (l *Later) Runs(ctx context.Context) ([]record.Run, error) {
	db, err := l.open(ctx)
	if errors.Is(err, ErrNoStore) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return db.Runs(ctx)
}

// Run returns one run (see DB.Run).
func (l *Later) Run(ctx context.Context, idOrPrefix string) (record.Run, error) {
	db, err := l.open(ctx)
	if err != nil {
		return record.Run{}, err
	}
	return db.Run(ctx, idOrPrefix)
}

// Targets returns a run's targets (see DB.Targets).
func (l *Later) Targets(ctx context.Context, runID string) ([]record.Target, error) {
	db, err := l.open(ctx)
	if err != nil {
		return nil, err
	}
	return db.Targets(ctx, runID)
}

// Samples returns a run's samples (see DB.Samples).
func (l *Later) Samples(ctx context.Context, runID string) ([]record.Sample, error) {
	db, err := l.open(ctx)
	if err != nil {
		return nil, err
	}
	return db.Samples(ctx, runID)
}

// Close closes the store if it was opened.
func (l *Later) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.db == nil {
		return nil
	}
	return l.db.Close()
}
