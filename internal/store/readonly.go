package store

import (
	"context"
	"fmt"
)

// OpenReadOnly opens the existing results store at location (see Open) for reading only: every
// connection refuses writes (SQLite's query_only; PostgreSQL's default_transaction_read_only),
// so that a reader such as `cnibench serve` can never change what it shows. It neither
// creates a store (ErrNoStore, as OpenExisting) nor migrates one: a schema older or newer than
// this cnibench's is an error saying how to bring them together.
func OpenReadOnly(ctx context.Context, location string) (*DB, error) {
	if location == "" {
		location = DefaultLocation()
	}
	if err := checkExists(location); err != nil {
		return nil, err
	}
	d, err := connectAs(ctx, location, true)
	if err != nil {
		return nil, err
	}
	latest := len(migrations(d.dialect))
	current, err := d.schemaVersion(ctx, d.db)
	switch {
	case err != nil:
		err = fmt.Errorf("%w (is it a cnibench results store?)", err)
	case current < latest:
		err = fmt.Errorf("%s has schema version %d, older than the %d this cnibench reads: "+
			"a command that opens it for writing (cnibench results list) brings it up to date", d.desc(), current, latest)
	case current > latest:
		err = fmt.Errorf("%s has schema version %d, newer than the %d this cnibench knows: use a newer cnibench",
			d.desc(), current, latest)
	}
	if err != nil {
		_ = d.db.Close()
		return nil, err
	}
	return d, nil
}
