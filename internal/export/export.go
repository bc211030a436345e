// Package export reads stored runs back out of the results store: the list of runs, and one
// run in full as CSV (one row per value, for spreadsheets and pandas), JSON (everything,
// raw tool output included, for archiving and re-analysis) or the OpenMetrics text format
// (for Prometheus backfilling and Grafana).
package export

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/internal/setting"
	"github.com/cnibench/cnibench/internal/store"
)

// Source is the read side of *store.DB that loading a run needs; tests may fake it.
type Source interface {
	Run(ctx context.Context, idOrPrefix string) (store.Run, error)
	Targets(ctx context.Context, runID string) ([]store.Target, error)
	Samples(ctx context.Context, runID string) ([]store.Sample, error)
}

// Bundle is one stored run with everything it holds.
type Bundle struct {
	Run     store.Run
	Targets []store.Target // by name
	Samples []store.Sample // in Seq order, warm-up and failed samples included
}

// Load reads the run whose id is idOrPrefix (or the only run whose id starts with it) with
// its targets and samples.
func Load(ctx context.Context, src Source, idOrPrefix string) (Bundle, error) {
	r, err := src.Run(ctx, idOrPrefix)
	if err != nil {
		return Bundle{}, err
	}
	targets, err := src.Targets(ctx, r.ID)
	if err != nil {
		return Bundle{}, err
	}
	samples, err := src.Samples(ctx, r.ID)
	if err != nil {
		return Bundle{}, err
	}
	return Bundle{Run: r, Targets: targets, Samples: samples}, nil
}

// Export formats accepted by Write.
const (
	FormatCSV         = "csv"
	FormatJSON        = "json"
	FormatOpenMetrics = "openmetrics"
)

// Formats lists the export formats, for help texts and error messages.
func Formats() []string { return []string{FormatCSV, FormatJSON, FormatOpenMetrics} }

// Write renders b in one of Formats.
func Write(w io.Writer, format string, b Bundle) error {
	switch format {
	case FormatCSV:
		return WriteCSV(w, b)
	case FormatJSON:
		return WriteJSON(w, b)
	case FormatOpenMetrics:
		return WriteOpenMetrics(w, b)
	}
	return &setting.Error{Name: "format", Value: strconv.Quote(format), Want: "expected one of " + strings.Join(Formats(), ", ")}
}

// ErrNoStore is returned (wrapped) by OpenExisting when there is no results store at the
// location.
var ErrNoStore = errors.New("no results store")

// OpenExisting opens the results store at location like store.Open, but refuses to create a
// SQLite file that does not exist yet: a reading command given a mistyped --store would
// otherwise leave an empty database behind and then report every run as not found.
func OpenExisting(ctx context.Context, location string) (*store.DB, error) {
	if location == "" {
		location = store.DefaultLocation()
	}
	if path, ok := sqliteFile(location); ok {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("open results store %s: %w (nothing has been stored there yet)", path, ErrNoStore)
		} else if err != nil {
			return nil, fmt.Errorf("open results store %s: %w", path, err)
		}
	}
	return store.Open(ctx, location)
}

// sqliteFile returns the database file a SQLite location names, resolving a directory the way
// store.Open does; ok is false for locations of other backends, which are left to store.Open.
func sqliteFile(location string) (path string, ok bool) {
	if scheme, rest, found := strings.Cut(location, "://"); found {
		switch strings.ToLower(scheme) {
		case "sqlite", "sqlite3", "file":
			if rest == "" {
				return "", false // store.Open explains what is wrong
			}
			location = rest
		default:
			return "", false
		}
	}
	if strings.HasSuffix(location, "/") {
		return filepath.Join(location, "results.db"), true
	}
	if fi, err := os.Stat(location); err == nil && fi.IsDir() {
		return filepath.Join(location, "results.db"), true
	}
	return location, true
}

// LoadFrom opens the existing store at location, loads one run (an id or a unique prefix of
// one) and closes the store again.
func LoadFrom(ctx context.Context, location, run string) (Bundle, error) {
	db, err := OpenExisting(ctx, location)
	if err != nil {
		return Bundle{}, &setting.Error{Name: "store", Err: err}
	}
	defer db.Close()
	return Load(ctx, db, run)
}
