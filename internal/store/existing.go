package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrNoStore is returned (wrapped) by OpenExisting when there is no results store at the
// location.
var ErrNoStore = errors.New("no results store")

// OpenExisting opens the results store at location like Open, but refuses to create a
// SQLite file that does not exist yet: a reading command given a mistyped --store would
// otherwise leave an empty database behind and then report every run as not found.
func OpenExisting(ctx context.Context, location string) (*DB, error) {
	if location == "" {
		location = DefaultLocation()
	}
	if err := checkExists(location); err != nil {
		return nil, err
	}
	return Open(ctx, location)
}

// checkExists refuses a SQLite location whose database file does not exist (ErrNoStore);
// other backends' locations are left to connect.
func checkExists(location string) error {
	if path, ok := existingSQLiteFile(location); ok {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("open results store %s: %w (nothing has been stored there yet)", path, ErrNoStore)
		} else if err != nil {
			return fmt.Errorf("open results store %s: %w", path, err)
		}
	}
	return nil
}

// existingSQLiteFile returns the database file a SQLite location names, resolving a
// directory the way Open does; ok is false for locations of other backends, which are left
// to Open.
func existingSQLiteFile(location string) (path string, ok bool) {
	if scheme, rest, found := strings.Cut(location, "://"); found {
		switch strings.ToLower(scheme) {
		case "sqlite", "sqlite3", "file":
			if rest == "" {
				return "", false // Open explains what is wrong
			}
			location = rest
		default:
			return "", false
		}
	}
	if strings.HasSuffix(location, "/") {
		return filepath.Join(location, sqliteFile), true
	}
	if fi, err := os.Stat(location); err == nil && fi.IsDir() {
		return filepath.Join(location, sqliteFile), true
	}
	return location, true
}
