package export

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	runlabel "github.com/cnibench/cnibench/internal/label"

	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/setting"
)

// Lister is a Source that can also list every run.
type Lister interface {
	Source
	Runs(ctx context.Context) ([]record.Run, error)
}

// Interrupted is the status the list shows for a run that stopped before its end, whether it
// was cancelled (stored as partial) or its process was killed (still stored as running).
const Interrupted = "interrupted"

// RunInfo is one line of the list of stored runs.
type RunInfo struct {
	ID       string        `json:"id"`
	Started  time.Time     `json:"started"`
	Finished *time.Time    `json:"finished,omitempty"` // nil while running (or killed)
	Status   string        `json:"status"`
	Targets  []string      `json:"targets"`
	Samples  int           `json:"samples"` // measured samples, failed ones included
	Failed   int           `json:"failed"`  // measured samples that failed
	Warmup   int           `json:"warmup"`  // warm-up samples, not part of the results
	Duration time.Duration `json:"-"`       // Finished - Started; 0 while running
	Seconds  float64       `json:"duration_s,omitempty"`
	Note     string        `json:"note,omitempty"`
	Labels   runlabel.Set  `json:"labels,omitempty"`
}

// List describes every stored run the selector selects by its labels, newest first.
//
// It reads each run's samples whole, raw output included, because the store has no cheaper
// way to count them; that is fine for the hundreds of runs a person keeps.
func List(ctx context.Context, src Lister, sel runlabel.Selector) ([]RunInfo, error) {
	runs, err := src.Runs(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]RunInfo, 0, len(runs))
	for _, r := range runs {
		if !sel.Matches(r.Labels) {
			continue
		}
		info := RunInfo{ID: r.ID, Started: r.Started, Status: r.Status, Targets: []string{}, Note: r.Note, Labels: r.Labels}
		if r.Interrupted() {
			// Cancelled, or still marked running while its process is gone (killed).
			info.Status = Interrupted
		}
		if !r.Finished.IsZero() {
			f := r.Finished
			info.Finished = &f
			info.Duration = r.Finished.Sub(r.Started)
			info.Seconds = info.Duration.Seconds()
		}
		targets, err := src.Targets(ctx, r.ID)
		if err != nil {
			return nil, err
		}
		for _, t := range targets {
			info.Targets = append(info.Targets, t.Name)
		}
		samples, err := src.Samples(ctx, r.ID)
		if err != nil {
			return nil, err
		}
		for _, s := range samples {
			switch {
			case s.Warmup:
				info.Warmup++
			case s.Error != "":
				info.Samples++
				info.Failed++
			default:
				info.Samples++
			}
		}
		out = append(out, info)
	}
	return out, nil
}

// WriteList renders the list of runs as "table" or "json" (an array, empty rather than null
// when there are no runs).
func WriteList(w io.Writer, format string, runs []RunInfo) error {
	switch format {
	case "json":
		if runs == nil {
			runs = []RunInfo{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(runs); err != nil {
			return fmt.Errorf("write run list: %w", err)
		}
		return nil
	case "table":
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tSTARTED\tSTATUS\tTARGETS\tSAMPLES\tDURATION\tLABELS")
		for _, r := range runs {
			samples := fmt.Sprint(r.Samples)
			if r.Failed > 0 {
				samples += fmt.Sprintf(" (%d failed)", r.Failed)
			}
			duration := "-"
			if r.Finished != nil {
				duration = r.Duration.Round(time.Second).String()
			}
			labels := r.Labels.String()
			if labels == "" {
				labels = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Started.UTC().Format("2006-01-02 15:04:05Z"), r.Status,
				strings.Join(r.Targets, ","), samples, duration, labels)
		}
		if err := tw.Flush(); err != nil {
			return fmt.Errorf("write run list: %w", err)
		}
		return nil
	}
	return &setting.Error{Name: "output", Value: fmt.Sprintf("%q", format), Want: "expected table or json"}
}
