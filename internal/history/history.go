// Package history follows figures over stored runs: for each target, cell and metric, the
// series of its run means in the order the runs started, and the change points in it
// (internal/changepoint: E-Divisive means as Apache Otava runs it, with a t test between
// segments), each with the size of its step. A CI that stores a run per commit or per night
// sees there the step a regression makes, which one run against another cannot tell from noise.
package history

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/cnibench/cnibench/internal/analysis"
	"github.com/cnibench/cnibench/internal/catalog"
	"github.com/cnibench/cnibench/internal/changepoint"
	"github.com/cnibench/cnibench/internal/export"
	"github.com/cnibench/cnibench/internal/label"
	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/stats"
)

// Store is what history reads: the runs, and each run's targets and samples.
type Store interface {
	export.Source
	Runs(ctx context.Context) ([]record.Run, error)
}

// Options selects the series.
type Options struct {
	// Selector picks runs by their labels; Last keeps the newest Last of them (0: all).
	Selector label.Selector
	Last     int
	// Target, Path, Workload and Metrics narrow the series; empty means all. Without
	// Metrics, each cell's verdict metric.
	Target, Path, Workload string
	Metrics                []string
	// Until leaves out runs that started after it (zero: none), so that a run's report shows
	// the history up to that run.
	Until time.Time
	// Detect tunes the change point detection. Its Alpha (default 5 %) is the chance of a
	// false change point anywhere among the series built: each series is searched at Alpha
	// over their number (Bonferroni), since a CI fails on any of them.
	Detect changepoint.Options
}

// Point is one run's value in a series.
type Point struct {
	Run     string            `json:"run"`
	Started time.Time         `json:"started"`
	Labels  map[string]string `json:"labels,omitempty"`
	Mean    float64           `json:"mean"`
	N       int               `json:"n"` // the run's measured samples behind the mean
}

// Step is a change point of a series.
type Step struct {
	changepoint.Change
	// Run is the first run of the new level.
	Run string `json:"run"`
	// Worse says the step goes the metric's wrong way (a throughput down, a latency up);
	// false for an improvement or where the metric has no direction.
	Worse bool `json:"worse"`
}

// Series is one metric of one cell of one target over the runs.
type Series struct {
	Target    string  `json:"target"`
	Path      string  `json:"path"`
	Workload  string  `json:"workload"`
	Pairs     int     `json:"pairs"`
	Metric    string  `json:"metric"`
	Unit      string  `json:"unit"`
	Direction string  `json:"direction"` // "higher", "lower" or ""
	Points    []Point `json:"points"`
	Steps     []Step  `json:"changes"`
}

// Kind names a step of the series: "worse" or "better" by the metric's direction, "change"
// where it has none.
func (s Series) Kind(st Step) string {
	switch {
	case st.Worse:
		return "worse"
	case s.Direction != "":
		return "better"
	}
	return "change"
}

// Regressions counts the steps that go the metric's wrong way.
func (s Series) Regressions() int {
	n := 0
	for _, st := range s.Steps {
		if st.Worse {
			n++
		}
	}
	return n
}

// Build reads the selected runs and returns every selected series, with its change points.
func Build(ctx context.Context, src Store, o Options) ([]Series, error) {
	series, _, err := BuildCounted(ctx, src, o)
	return series, err
}

// BuildCounted is Build, also returning how many runs were read.
func BuildCounted(ctx context.Context, src Store, o Options) ([]Series, int, error) {
	runs, err := selectRuns(ctx, src, o)
	if err != nil {
		return nil, 0, err
	}
	type seriesKey struct {
		target string
		cell   record.Cell
		metric string
	}
	points := map[seriesKey][]Point{}
	for _, r := range runs {
		samples, err := src.Samples(ctx, r.ID)
		if err != nil {
			return nil, 0, fmt.Errorf("samples of run %s: %w", r.ID, err)
		}
		for c, byMetric := range means(samples) {
			if !o.wants(c) {
				continue
			}
			for _, m := range o.metricsOf(c, byMetric) {
				k := seriesKey{c.Target, record.Cell{Path: c.Path, Workload: c.Workload, Pairs: c.Pairs}, m}
				points[k] = append(points[k], Point{Run: r.ID, Started: r.Started, Labels: r.Labels,
					Mean: stats.Summarize(byMetric[m]).Mean, N: len(byMetric[m])})
			}
		}
	}
	out := make([]Series, 0, len(points))
	perSeries := o.Detect
	if perSeries.Alpha == 0 {
		perSeries.Alpha = changepoint.DefaultAlpha
	}
	perSeries.Alpha /= float64(max(len(points), 1))
	for k, p := range points {
		s := Series{Target: k.target, Path: k.cell.Path, Workload: k.cell.Workload, Pairs: k.cell.Pairs, Metric: k.metric, Points: p}
		if spec, ok := catalog.Lookup(k.metric); ok {
			s.Unit, s.Direction = spec.Unit, "lower"
			if spec.HigherIsBetter {
				s.Direction = "higher"
			}
		}
		if err := s.detect(perSeries); err != nil {
			return nil, 0, err
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return less(out[i], out[j]) })
	return out, len(runs), nil
}

// selectRuns are the complete runs the options select, oldest first.
func selectRuns(ctx context.Context, src Store, o Options) ([]record.Run, error) {
	all, err := src.Runs(ctx)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	var runs []record.Run
	for _, r := range all {
		if r.Status == record.StatusComplete && o.Selector.Matches(r.Labels) && (o.Until.IsZero() || !r.Started.After(o.Until)) {
			runs = append(runs, r)
		}
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].Started.Before(runs[j].Started) })
	if o.Last > 0 && len(runs) > o.Last {
		runs = runs[len(runs)-o.Last:]
	}
	return runs, nil
}

// means groups a run's measured, successful values by cell and metric.
func means(samples []record.Sample) map[record.Cell]map[string][]float64 {
	out := map[record.Cell]map[string][]float64{}
	for _, s := range samples {
		if s.Warmup || s.Error != "" {
			continue
		}
		c := s.Cell()
		if out[c] == nil {
			out[c] = map[string][]float64{}
		}
		for _, m := range []map[string]float64{s.Metrics, s.Resources} {
			for name, v := range m {
				out[c][name] = append(out[c][name], v)
			}
		}
	}
	return out
}

// wants says whether the options select a cell.
func (o Options) wants(c record.Cell) bool {
	return (o.Target == "" || o.Target == c.Target) && (o.Path == "" || o.Path == c.Path) &&
		(o.Workload == "" || o.Workload == c.Workload || analysis.WorkloadKind(c.Workload) == o.Workload)
}

// metricsOf are the metrics followed in a cell: those asked for that it has, or its verdict
// metric.
func (o Options) metricsOf(c record.Cell, byMetric map[string][]float64) []string {
	if len(o.Metrics) == 0 {
		if m := analysis.VerdictMetric(c.Workload, byMetric); m != "" {
			return []string{m}
		}
		return nil
	}
	var out []string
	for _, m := range o.Metrics {
		if _, ok := byMetric[m]; ok {
			out = append(out, m)
		}
	}
	return out
}

// detect finds the series' change points.
func (s *Series) detect(o changepoint.Options) error {
	values := make([]float64, len(s.Points))
	for i, p := range s.Points {
		values[i] = p.Mean
	}
	changes, err := changepoint.Detect(values, o)
	if err != nil {
		return fmt.Errorf("change points of %s %s %s %s: %w", s.Target, s.Path, s.Workload, s.Metric, err)
	}
	s.Steps = []Step{} // "changes": [] in JSON, not null
	for _, c := range changes {
		up := c.After > c.Before
		s.Steps = append(s.Steps, Step{Change: c, Run: s.Points[c.Index].Run,
			Worse: s.Direction != "" && up == (s.Direction == "lower") && c.After != c.Before})
	}
	return nil
}

// less orders series as the tables do: target, then the analysis order of cells and metrics.
func less(a, b Series) bool {
	if a.Target != b.Target {
		return a.Target < b.Target
	}
	oa := analysis.Order{Workload: a.Workload, Pairs: a.Pairs, Path: a.Path, Metric: a.Metric}
	ob := analysis.Order{Workload: b.Workload, Pairs: b.Pairs, Path: b.Path, Metric: b.Metric}
	return oa.Compare(ob) < 0
}

// Step size as a person reads it: "-9.8 % [-13, -6.4]" for a ratio, the difference in the
// metric's unit where the ratio does not exist.
func (st Step) size(unit string) string {
	if math.IsNaN(st.Ratio) {
		return fmt.Sprintf("%+.3g %s", st.After-st.Before, unit)
	}
	s := fmt.Sprintf("%+.3g %%", (st.Ratio-1)*100)
	if !math.IsNaN(st.RatioLow) && !math.IsNaN(st.RatioHigh) {
		s += fmt.Sprintf(" [%+.3g, %+.3g]", (st.RatioLow-1)*100, (st.RatioHigh-1)*100)
	}
	return s
}

// ForRun is the history a report of run shows: each of its targets' cells (their verdict
// metrics) over the complete runs the selector picks that started no later than it, where the
// store holds at least two such runs.
func ForRun(ctx context.Context, src Store, run record.Run, targets []string, sel label.Selector) ([]Series, error) {
	all, err := Build(ctx, src, Options{Selector: sel, Until: run.Started})
	if err != nil {
		return nil, err
	}
	var out []Series
	for _, s := range all {
		if slices.Contains(targets, s.Target) && len(s.Points) >= 2 {
			out = append(out, s)
		}
	}
	return out, nil
}
