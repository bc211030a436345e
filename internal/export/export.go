// Package export reads stored runs back out of the results store: the list of runs, and one
// run in full as CSV (one row per value, for spreadsheets and pandas), JSON (everything,
// raw tool output included, for archiving and re-analysis) or the OpenMetrics text format
// (for Prometheus backfilling and Grafana).
package export

import (
	"context"
	"io"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/setting"
)

// Source is the read side of *store.DB that loading a run needs; tests may fake it.
type Source interface {
	Run(ctx context.Context, idOrPrefix string) (record.Run, error)
	Targets(ctx context.Context, runID string) ([]record.Target, error)
	Samples(ctx context.Context, runID string) ([]record.Sample, error)
}

// Bundle is one stored run with everything it holds.
type Bundle struct {
	Run     record.Run
	Targets []record.Target // by name
	Samples []record.Sample // in Seq order, warm-up and failed samples included
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
