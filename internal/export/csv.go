package export

import (
	"encoding/csv"
	"fmt"
	"io"
	"sort"
	"strconv"
	"time"

	"github.com/cnibench/cnibench/internal/record"
)

// CSVHeader is the first row WriteCSV writes: the columns of every following row.
func CSVHeader() []string {
	return []string{"run", "seq", "round", "warmup", "target", "path", "workload", "pairs", "started", "kind", "name", "value", "error"}
}

// Value kinds in the CSV "kind" column.
const (
	KindMetric   = "metric"
	KindResource = "resource"
)

// WriteCSV writes one row per sample and value (metrics first, then resources, each by
// name), with RFC 4180 quoting. Every sample is included, warm-up and failed ones too, so
// that the file is a complete copy of the run's figures; a sample without any value (a
// failed one, usually) still gets one row, with empty kind, name and value, so that its
// error is not lost. Values are written in the shortest form that parses back to the same
// float64.
func WriteCSV(w io.Writer, b Bundle) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader()); err != nil {
		return fmt.Errorf("write csv: %w", err)
	}
	for _, s := range b.Samples {
		head := []string{b.Run.ID, strconv.Itoa(s.Seq), strconv.Itoa(s.Round), strconv.FormatBool(s.Warmup),
			s.Target, s.Path, s.Workload, strconv.Itoa(s.Cell().Pairs), s.Started.UTC().Format(time.RFC3339Nano)}
		rows := 0
		for _, kv := range []struct {
			kind   string
			values map[string]float64
		}{{KindMetric, s.Metrics}, {KindResource, s.Resources}} {
			for _, name := range sortedNames(kv.values) {
				v := strconv.FormatFloat(kv.values[name], 'g', -1, 64)
				if err := cw.Write(append(head[:len(head):len(head)], kv.kind, name, v, s.Error)); err != nil {
					return fmt.Errorf("write csv: sample %d: %w", s.Seq, err)
				}
				rows++
			}
		}
		if rows == 0 {
			if err := cw.Write(append(head[:len(head):len(head)], "", "", "", s.Error)); err != nil {
				return fmt.Errorf("write csv: sample %d: %w", s.Seq, err)
			}
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write csv: %w", err)
	}
	return nil
}

// sortedNames returns the keys of m in order, so that exports are byte-for-byte stable.
func sortedNames(m map[string]float64) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// sampleOK reports whether a sample belongs in the results: measured (not warm-up) and
// successful, the same rule report.Summarize applies.
func sampleOK(s record.Sample) bool { return !s.Warmup && s.Error == "" }
