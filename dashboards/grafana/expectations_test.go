package grafana

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/analysis"
	"github.com/cnibench/cnibench/internal/catalog"
	"github.com/cnibench/cnibench/internal/export"
	"github.com/cnibench/cnibench/internal/history"
	"github.com/cnibench/cnibench/internal/label"
	"github.com/cnibench/cnibench/internal/record"
)

// aaID is the id of the real run (aaRun).
const aaID = "20261127-162953-4172"

// expectations are the panels' scenarios and checks, by dashboard uid and panel title.
func expectations() map[string]expectation {
	labelScenarios := []scenario{
		{name: "all", tr: wide},
		{name: "branch=main", sel: map[string]selection{"label_key": pick("branch"), "label_value": pick("main")}, tr: wide},
		{name: "branch in (main, dev)", sel: map[string]selection{"label_key": pick("branch"), "label_value": pick("main", "dev")}, tr: wide},
		{name: "a value with a quote", sel: map[string]selection{"label_key": pick("note"), "label_value": pick("o'clock")}, tr: wide},
		{name: "5 to 11 June", tr: june},
	}
	run := func(id string, targets ...string) map[string]selection {
		sel := map[string]selection{"run": pick(id)}
		if len(targets) > 0 {
			sel["target"] = pick(targets...)
		}
		return sel
	}
	runScenarios := []scenario{
		{name: "newest run", tr: wide},
		{name: "real run, one target", sel: run(aaID, "twin-b"), tr: wide},
		{name: "synthetic run", sel: run("s1-main"), tr: wide},
	}
	return map[string]expectation{
		"cnibench-runs/Runs":   {scenarios: labelScenarios, check: checkRuns},
		"cnibench-runs/Labels": {scenarios: []scenario{{name: "all", tr: wide}, {name: "5 to 11 June", tr: june}}, check: checkLabels},
		"cnibench-run/Run":     {scenarios: runScenarios, check: checkRun},
		"cnibench-run/Samples": {scenarios: runScenarios, check: checkSamples},
		"cnibench-run/Headline figures": {scenarios: append(runScenarios,
			scenario{name: "real run, both targets named", sel: run(aaID, "twin-a", "twin-b"), tr: wide}), check: checkHeadline},
		"cnibench-history/${metric}": {scenarios: []scenario{
			{name: "all", tr: wide},
			{name: "branch=main, one target", sel: map[string]selection{"label_key": pick("branch"), "label_value": pick("main"),
				"target": pick("kind-a")}, tr: wide},
			{name: "5 to 11 June, two metrics", sel: map[string]selection{"metric": pick("throughput_gbps", "loss_pct")}, tr: june},
		}, check: checkHistory},
	}
}

// variableChecks are the query variables' expected options, by dashboard uid and name.
func variableChecks() map[string]variableCheck {
	keys := func(ctx context.Context, f *testStore, _ resolved, got []string) error {
		runs, err := f.db.Runs(ctx)
		if err != nil {
			return err
		}
		var want []string
		for _, r := range runs {
			for k := range r.Labels {
				want = append(want, k)
			}
		}
		return sameList(got, sortedSet(want))
	}
	values := func(ctx context.Context, f *testStore, sc resolved, got []string) error {
		runs, err := f.db.Runs(ctx)
		if err != nil {
			return err
		}
		var want []string
		for _, r := range runs {
			if v, ok := r.Labels[sc.sel["label_key"].values[0]]; ok {
				want = append(want, v)
			}
		}
		return sameList(got, sortedSet(want))
	}
	return map[string]variableCheck{
		"cnibench-runs/label_key":      keys,
		"cnibench-runs/label_value":    values,
		"cnibench-history/label_key":   keys,
		"cnibench-history/label_value": values,
		"cnibench-run/run": func(ctx context.Context, f *testStore, _ resolved, got []string) error {
			runs, err := f.db.Runs(ctx)
			if err != nil {
				return err
			}
			var want []string
			for _, r := range runs {
				want = append(want, r.ID)
			}
			return sameList(got, want)
		},
		"cnibench-run/target": func(ctx context.Context, f *testStore, sc resolved, got []string) error {
			return sameList(got, targetsOf(ctx, f, sc.sel["run"].values[0]))
		},
		"cnibench-history/target": func(ctx context.Context, f *testStore, _ resolved, got []string) error {
			runs, err := f.db.Runs(ctx)
			if err != nil {
				return err
			}
			var want []string
			for _, r := range runs {
				want = append(want, targetsOf(ctx, f, r.ID)...)
			}
			return sameList(got, sortedSet(want))
		},
		"cnibench-history/metric": checkMetricOptions,
	}
}

// checkMetricOptions: the headline metrics that some stored sample has.
func checkMetricOptions(ctx context.Context, f *testStore, sc resolved, got []string) error {
	headline := strings.Split(sc.sel["headline"].values[0], ",")
	runs, err := f.db.Runs(ctx)
	if err != nil {
		return err
	}
	var want []string
	for _, r := range runs {
		samples, err := f.db.Samples(ctx, r.ID)
		if err != nil {
			return err
		}
		for _, s := range samples {
			for _, m := range []map[string]float64{s.Metrics, s.Resources} {
				for name := range m {
					if slices.Contains(headline, name) {
						want = append(want, name)
					}
				}
			}
		}
	}
	if !slices.Contains(got, catalog.Throughput) || !slices.Contains(got, catalog.Loss) {
		return fmt.Errorf("options %q lack the stored throughput or loss", got)
	}
	return sameList(got, sortedSet(want))
}

// selectedRuns are the runs that the label pickers and the time range select, newest first,
// as `results list -l key=value` lists them (one selector per chosen value).
func selectedRuns(ctx context.Context, f *testStore, sc resolved) ([]export.RunInfo, error) {
	all, err := export.List(ctx, f.db, label.Selector{})
	if err != nil {
		return nil, err
	}
	var sels []label.Selector
	if v := sc.sel["label_value"]; !v.all {
		for _, value := range v.values {
			sel, err := label.ParseSelector(sc.sel["label_key"].values[0] + "=" + value)
			if err != nil {
				return nil, err
			}
			sels = append(sels, sel)
		}
	} else {
		sels = []label.Selector{{}}
	}
	var out []export.RunInfo
	for _, r := range all {
		if in(sc.tr, r.Started) && slices.ContainsFunc(sels, func(s label.Selector) bool { return s.Matches(r.Labels) }) {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the scenario selects no run: it proves nothing")
	}
	return out, nil
}

func in(tr timeRange, t time.Time) bool { return !t.Before(tr.from) && !t.After(tr.to) }

// checkRuns: the runs `results list` lists, in its order, with its counts.
func checkRuns(ctx context.Context, f *testStore, sc resolved, rows []row) error {
	want, err := selectedRuns(ctx, f, sc)
	if err != nil {
		return err
	}
	if len(rows) != len(want) {
		return fmt.Errorf("%d rows (%v), want %d", len(rows), column(rows, "run"), len(want))
	}
	for i, w := range want {
		r := rows[i]
		stored, err := f.db.Run(ctx, w.ID)
		if err != nil {
			return err
		}
		targets := slices.Sorted(slices.Values(w.Targets))
		switch {
		case r.str("run") != w.ID:
			return fmt.Errorf("row %d: run %s, want %s", i, r.str("run"), w.ID)
		case !sameInstant(r.when("started"), w.Started) || !sameInstant(r.when("finished"), *w.Finished):
			return fmt.Errorf("%s: started %v, finished %v; want %v, %v", w.ID, r.when("started"), r.when("finished"), w.Started, *w.Finished)
		case r.str("status") != stored.Status || r.str("labels") != w.Labels.String() || r.str("targets") != strings.Join(targets, ", "):
			return fmt.Errorf("%s: status %q, labels %q, targets %q; want %q, %q, %q", w.ID, r.str("status"), r.str("labels"),
				r.str("targets"), stored.Status, w.Labels.String(), strings.Join(targets, ", "))
		case r.num("samples") != float64(w.Samples) || r.num("failed") != float64(w.Failed):
			return fmt.Errorf("%s: %v samples, %v failed; want %d, %d", w.ID, r.num("samples"), r.num("failed"), w.Samples, w.Failed)
		case abs(r.num("duration")-w.Seconds) > 1e-5:
			return fmt.Errorf("%s: duration %v s, want %v", w.ID, r.num("duration"), w.Seconds)
		case len(r.str("suite")) != 8:
			return fmt.Errorf("%s: suite %q, want 8 hex digits", w.ID, r.str("suite"))
		}
	}
	return nil
}

// checkLabels: each label of the runs in the time range, how many carry it, the last start.
func checkLabels(ctx context.Context, f *testStore, sc resolved, rows []row) error {
	runs, err := f.db.Runs(ctx)
	if err != nil {
		return err
	}
	count, last := map[string]int{}, map[string]time.Time{}
	for _, r := range runs {
		if !in(sc.tr, r.Started) {
			continue
		}
		for k, v := range r.Labels {
			kv := k + "=" + v
			count[kv]++
			if r.Started.After(last[kv]) {
				last[kv] = r.Started
			}
		}
	}
	var got []string
	for _, r := range rows {
		kv := r.str("label") + "=" + r.str("value")
		got = append(got, kv)
		if r.num("runs") != float64(count[kv]) || !sameInstant(r.when("last run"), last[kv]) {
			return fmt.Errorf("%s: %v runs, last %v; want %d, %v", kv, r.num("runs"), r.when("last run"), count[kv], last[kv])
		}
	}
	if len(count) == 0 {
		return fmt.Errorf("no label in the time range: the scenario proves nothing")
	}
	return sameList(got, slices.Sorted(maps.Keys(count)))
}

// checkRun: the one run picked.
func checkRun(ctx context.Context, f *testStore, sc resolved, rows []row) error {
	id := sc.sel["run"].values[0]
	r, err := f.db.Run(ctx, id)
	if err != nil {
		return err
	}
	if len(rows) != 1 {
		return fmt.Errorf("%d rows, want the run", len(rows))
	}
	got := rows[0]
	if got.str("run") != id || got.str("status") != r.Status || got.str("version") != r.Version ||
		got.num("seed") != float64(r.Seed) || got.str("labels") != label.Set(r.Labels).String() || got.str("note") != r.Note ||
		!sameInstant(got.when("started"), r.Started) || abs(got.num("duration")-r.Finished.Sub(r.Started).Seconds()) > 1e-5 {
		return fmt.Errorf("row %v, want run %+v", got, r)
	}
	return nil
}

// checkSamples: per chosen target, the run's measured, failed, flagged and warm-up samples.
func checkSamples(ctx context.Context, f *testStore, sc resolved, rows []row) error {
	b, err := export.Load(ctx, f.db, sc.sel["run"].values[0])
	if err != nil {
		return err
	}
	type counts struct{ measured, failed, flagged, warmup float64 }
	want := map[string]*counts{}
	for _, t := range sc.values("target") {
		want[t] = &counts{}
	}
	for _, s := range b.Samples {
		c, ok := want[s.Target]
		switch {
		case !ok:
		case s.Warmup:
			c.warmup++
		default:
			c.measured++
			if s.Error != "" {
				c.failed++
			}
			if len(s.Flags) > 0 {
				c.flagged++
			}
		}
	}
	if len(rows) != len(want) {
		return fmt.Errorf("%d rows (%v), want one per target of %v", len(rows), column(rows, "target"), sc.values("target"))
	}
	for _, r := range rows {
		w, ok := want[r.str("target")]
		if !ok || w.measured == 0 {
			return fmt.Errorf("row for target %q, which has no measured sample to show", r.str("target"))
		}
		if got := (counts{r.num("measured"), r.num("failed"), r.num("flagged"), r.num("warm-up")}); got != *w {
			return fmt.Errorf("target %s: %+v, want %+v", r.str("target"), got, *w)
		}
	}
	return nil
}

// checkHeadline: every headline row of the run's summary (analysis.Summarize, as `results
// show` prints it) for the chosen targets, with cnibench's n, mean and clipped interval.
func checkHeadline(ctx context.Context, f *testStore, sc resolved, rows []row) error {
	b, err := export.Load(ctx, f.db, sc.sel["run"].values[0])
	if err != nil {
		return err
	}
	targets := sc.values("target")
	want := map[string]analysis.Row{}
	for _, r := range analysis.Summarize(b.Samples) {
		if analysis.Headline(r) && slices.Contains(targets, r.Target) {
			want[strings.Join([]string{r.Target, r.Path, r.Label(), r.Metric}, " ")] = r
		}
	}
	if len(rows) != len(want) || len(want) == 0 {
		return fmt.Errorf("%d rows, want %d", len(rows), len(want))
	}
	for _, r := range rows {
		k := strings.Join([]string{r.str("target"), r.str("path"), r.str("workload"), r.str("metric")}, " ")
		w, ok := want[k]
		if !ok {
			return fmt.Errorf("row %s is not a headline figure of the run", k)
		}
		s := w.Summary
		if r.num("n") != float64(s.N) || !near(r.num("mean"), s.Mean) || !near(r.num("95 % low"), s.CILow) ||
			!near(r.num("95 % high"), s.CIHigh) || !near(r.num("± %"), 100*s.RelCI) {
			return fmt.Errorf("%s: n %v, mean %v [%v, %v] ± %v %%; cnibench has n %d, mean %v [%v, %v] ± %v %% (%s)", k,
				r.num("n"), r.num("mean"), r.num("95 % low"), r.num("95 % high"), r.num("± %"),
				s.N, s.Mean, s.CILow, s.CIHigh, 100*s.RelCI, s.Interval)
		}
	}
	return nil
}

// point is a point of a history series.
type point struct {
	series string
	at     time.Time
	mean   float64
}

// checkHistory: the repeated panel's metric, each series of `cnibench history` (history.Build)
// over the selected runs, a point per run in the time range.
func checkHistory(ctx context.Context, f *testStore, sc resolved, rows []row) error {
	metric := sc.sel["metric"].values[0]
	runs, err := selectedRuns(ctx, f, sc)
	if err != nil {
		return err
	}
	ids := map[string]bool{}
	for _, r := range runs {
		ids[r.ID] = true
	}
	series, err := history.Build(ctx, f.db, history.Options{Metrics: []string{metric}})
	if err != nil {
		return err
	}
	var want []point
	for _, s := range series {
		if !slices.Contains(sc.values("target"), s.Target) || (s.Metric == catalog.Fairness && s.Pairs <= 1) {
			continue
		}
		name := s.Target + " " + s.Path + " " + record.Cell{Workload: s.Workload, Pairs: s.Pairs}.WorkloadLabel()
		for _, p := range s.Points {
			if ids[p.Run] {
				want = append(want, point{name, p.Started, p.Mean})
			}
		}
	}
	var got []point
	for i, r := range rows {
		if i > 0 && r.when("time").Before(rows[i-1].when("time")) {
			return fmt.Errorf("rows not sorted by time, as Grafana needs them")
		}
		got = append(got, point{r.str("metric"), r.when("time"), r.num("value")})
	}
	order := func(ps []point) {
		sort.Slice(ps, func(i, j int) bool {
			if !ps[i].at.Equal(ps[j].at) && !sameInstant(ps[i].at, ps[j].at) {
				return ps[i].at.Before(ps[j].at)
			}
			return ps[i].series < ps[j].series
		})
	}
	order(want)
	order(got)
	// A metric that none of the selected runs has gives an empty panel, rightly.
	if len(got) != len(want) {
		return fmt.Errorf("%s: %d points, want %d", metric, len(got), len(want))
	}
	for i := range want {
		if got[i].series != want[i].series || !sameInstant(got[i].at, want[i].at) || !near(got[i].mean, want[i].mean) {
			return fmt.Errorf("%s: point %+v, want %+v", metric, got[i], want[i])
		}
	}
	return nil
}

func targetsOf(ctx context.Context, f *testStore, run string) []string {
	ts, err := f.db.Targets(ctx, run)
	if err != nil {
		return nil
	}
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	sort.Strings(out)
	return out
}

func sortedSet(xs []string) []string {
	out := slices.Clone(xs)
	sort.Strings(out)
	return slices.Compact(out)
}

func sameList(got, want []string) error {
	if !slices.Equal(got, want) {
		return fmt.Errorf("got %q, want %q", got, want)
	}
	return nil
}

func column(rows []row, col string) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.str(col))
	}
	return out
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
