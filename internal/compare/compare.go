// Package compare compares two measured configurations, A (the baseline) and B: two runs, or
// two targets of one run. For every (path, workload, metric) both sides measured it gives
// the ratio of means B/A with its confidence interval, the Mann-Whitney p-value and a
// verdict from B's point of view (stats.Compare, its p-value adjusted for the other metrics of
// the same workload and path), and renders the result as a terminal table, Markdown for a
// review, or JSON.
package compare

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/analysis"
	"github.com/cnibench/cnibench/internal/catalog"
	"github.com/cnibench/cnibench/internal/export"
	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/setting"
	"github.com/cnibench/cnibench/internal/stats"
)

// DefaultSeed is the seed a comparison records unless told otherwise. No figure of a comparison
// is random any more (the bootstrap for a mean of 0 is gone); the seed is kept in Options and
// Result so that callers and stored outputs keep their shape.
const DefaultSeed = 1

// VerdictNA is the verdict of a row that has no direction of improvement, or whose
// comparison could not be computed (see Row.Note).
const VerdictNA = "n/a"

// Side names one side of a comparison: a run, and the target within it.
type Side struct {
	Run    string // run id or unique prefix
	Target string // empty: the run's only target
}

// String writes the side the way ParseSide reads it.
func (s Side) String() string {
	if s.Target == "" {
		return s.Run
	}
	return s.Run + "/" + s.Target
}

// ParseSide reads "RUN" or "RUN/TARGET". Run ids never contain a slash, so everything after
// the first one is the target name.
func ParseSide(arg string) (Side, error) {
	run, target, hasTarget := strings.Cut(arg, "/")
	if run == "" {
		return Side{}, fmt.Errorf("%q: expected RUN or RUN/TARGET, with a run id or unique prefix", arg)
	}
	if hasTarget && target == "" {
		return Side{}, fmt.Errorf("%q: empty target after the slash; write RUN or RUN/TARGET", arg)
	}
	return Side{Run: run, Target: target}, nil
}

// Options selects what Compare compares.
type Options struct {
	A, B Side
	// Metrics limits the comparison to these metric or resource names; empty means all.
	Metrics []string
	// Seed is recorded in the result and passed to stats, which no longer draws from it
	// (DefaultSeed).
	Seed int64
	// Adjust is how the p-values are adjusted for giving all the verdicts at once
	// (stats.AdjustBH, AdjustHolm or AdjustNone); empty means DefaultAdjust.
	Adjust string
	// Pairing is stats.PairAuto (the zero value: two targets of one run are compared round
	// by round where every round measured both) or stats.PairOff (always unpaired).
	Pairing stats.Pairing
}

// DefaultAdjust is the multiple-comparison adjustment unless told otherwise. One workload on
// one path yields a dozen metrics, all read together; unadjusted, one in twenty of them would
// be "significant" by chance at p < 0.05 between two identical configurations.
// Benjamini-Hochberg keeps the share of such chance verdicts at 5 % while, unlike Holm, still
// calling the many real differences between two datapaths with the default 5 rounds.
const DefaultAdjust = stats.AdjustBH

// Family says which rows are adjusted together: in each (path, workload) cell, its headline
// metric alone (the question the gate asks), and its other metrics among themselves. A family
// over the whole comparison would let the number of other workloads in the suite decide
// whether a figure is significant, and with 5 runs a side 160 rows drown a clear 20 % latency
// difference whose tied samples give p = 0.012; a family of a cell's dozen metrics let a lone
// 22 % throughput drop pass the gate.
const Family = "each workload and path: the headline metric alone, the others among themselves"

// Resolved is one side of a comparison as found in the store.
type Resolved struct {
	Run         string            `json:"run"` // full run id
	Target      string            `json:"target"`
	Started     time.Time         `json:"started"` // when the run started
	Status      string            `json:"status"`  // the run's status
	Fingerprint map[string]string `json:"fingerprint"`
}

// Label is the side as RUN/TARGET with the full run id.
func (r Resolved) Label() string { return r.Run + "/" + r.Target }

// Result is a whole comparison.
type Result struct {
	A, B Resolved
	// Seed, Resamples and Alpha are the settings behind every interval and verdict, kept so
	// that anyone can reproduce them; the ratio interval's level is 1-Alpha.
	Seed      int64
	Resamples int
	Alpha     float64
	// Adjust is the multiple-comparison adjustment behind the verdicts, within each Family.
	Adjust  string
	Rows    []Row
	Summary Summary
	// OnlyA and OnlyB are the (path, workload) cells measured by one side only, which have
	// no rows.
	OnlyA, OnlyB []Cell
	// FingerprintDiff lists the fingerprint keys whose values differ between the two
	// targets, by key: what actually changed between A and B.
	FingerprintDiff []Difference
	// Pool lists the baseline runs of a pooled comparison (ComparePooled), oldest first; A
	// then stands for them all. Empty for a comparison of two sides.
	Pool []string
	// Gate is the gate's judgement, where the caller asked for one (Gate.Evaluate): the JSON
	// output carries it in the same document.
	Gate *GateResult
}

// Cell is a (path, workload, pairs) cell: the targets, or runs, are what is compared.
type Cell struct {
	Path     string `json:"path"`
	Workload string `json:"workload"`
	Pairs    int    `json:"pairs"`
}

// label is the workload with its concurrency, as the tables show it.
func (c Cell) label() string {
	return record.Cell{Workload: c.Workload, Pairs: c.Pairs}.WorkloadLabel()
}

// Difference is one fingerprint key whose value differs; an empty value means absent.
type Difference struct {
	Key string `json:"key"`
	A   string `json:"a"`
	B   string `json:"b"`
}

// Row compares one metric of one (path, workload) cell.
type Row struct {
	Path, Workload, Metric string
	Pairs                  int
	Unit                   string // empty for unknown metrics
	// Direction is "higher" or "lower" (the better direction), or "" when unknown.
	Direction string
	// NA and NB count the measured, successful samples with this metric; FailedA and
	// FailedB the failed samples of the cell, which have no values.
	NA, NB, FailedA, FailedB int
	MeanA, MeanB             float64
	// Ratio is MeanB/MeanA with its interval [RatioLow, RatioHigh] (stats.Compare); PValue is the
	// two-sided Mann-Whitney U p-value, U its statistic for B and Exact whether the p-value
	// is exact. All are NaN (Exact false) when the comparison could not be computed. Where
	// Paired, the two sides were measured in the same rounds and compared round by round
	// (stats.CompareBlocked) over the rounds that measured both: Ratio is still the ratio of
	// their means, the interval Fieller's, PValue the paired t's, and U NaN.
	Ratio, RatioLow, RatioHigh, PValue, U float64
	Paired                                bool
	// Pooled marks a row of a pooled comparison: NA counts A's runs, each one value (its
	// mean), and the interval and p are the prediction interval's (ComparePooled).
	Pooled bool
	// Points marks a metric compared on the difference scale (catalog.Points, UDP loss;
	// stats.ComparePoints): Diff is MeanB - MeanA in the metric's unit with its interval
	// [DiffLow, DiffHigh], PValue is the t-test's (paired where Paired, else Welch's), and
	// MDE is in the metric's unit.
	Points                  bool
	Diff, DiffLow, DiffHigh float64
	// MDE is the smallest relative difference this row could have called four times in five
	// (stats.Comparison.MDE): NaN when not computed, +Inf when untestable.
	MDE float64
	// Est is the t estimate behind the interval (stats.Comparison.Est): the log ratio, or the
	// difference for Points, with its standard error and degrees of freedom; the gate tests
	// it against the tolerance. Blocks is the number of rounds paired, or the smaller side's
	// sample count unpaired: the n the gate plans more rounds from.
	Est    stats.Estimate
	Blocks int
	Exact  bool
	// margin is a paired row's test against the gate's tolerance (stats.RatioTest).
	margin stats.RatioTest
	// PAdjusted is PValue adjusted (Result.Adjust) together with the other verdicts of its
	// workload and path; NaN in a row without a verdict.
	PAdjusted float64
	// Verdict is stats.VerdictBetter, VerdictWorse, VerdictNone or VerdictUntestable from
	// B's point of view, or VerdictNA.
	Verdict string
	// Note says why the verdict is VerdictNA.
	Note string
}

// Summary counts the rows by verdict.
type Summary struct {
	Better       int `json:"better"`
	Worse        int `json:"worse"`
	NoDifference int `json:"no_significant_difference"`
	// Untestable counts the rows whose sample sizes could not reach significance whatever
	// the data (3 against 3 and fewer).
	Untestable int `json:"untestable"`
	NA         int `json:"n/a"`
}

// Compare loads both sides from src and compares every (path, workload, metric) that both
// measured, over their measured (not warm-up), successful samples.
func Compare(ctx context.Context, src export.Source, o Options) (Result, error) {
	if o.Adjust == "" {
		o.Adjust = DefaultAdjust
	}
	if !slices.Contains(stats.AdjustMethods(), o.Adjust) {
		return Result{}, fmt.Errorf("adjustment %q: expected one of %s", o.Adjust, strings.Join(stats.AdjustMethods(), ", "))
	}
	a, sa, err := load(ctx, src, "A", o.A)
	if err != nil {
		return Result{}, err
	}
	b, sb, err := load(ctx, src, "B", o.B)
	if err != nil {
		return Result{}, err
	}
	res := Result{A: a, B: b, Seed: o.Seed, Resamples: stats.DefaultResamples, Alpha: stats.DefaultAlpha,
		Adjust: o.Adjust, FingerprintDiff: diff(a.Fingerprint, b.Fingerprint)}
	va, vb := collect(sa), collect(sb)
	if err := checkMetrics(o.Metrics, va, vb); err != nil {
		return Result{}, err
	}
	res.OnlyA, res.OnlyB = unmatched(va, vb), unmatched(vb, va)
	opts := stats.CompareOptions{Resamples: res.Resamples, Seed: o.Seed, Alpha: res.Alpha}
	for k, xa := range va.values {
		xb, ok := vb.values[k]
		if !ok || (len(o.Metrics) > 0 && !slices.Contains(o.Metrics, k.metric)) {
			continue
		}
		res.Rows = append(res.Rows, compareRow(k, xa, xb, va.failed[k.cell], vb.failed[k.cell], o.Pairing, opts))
	}
	sortRows(res.Rows)
	if err := adjust(res.Rows, res.Adjust, res.Alpha); err != nil {
		return Result{}, err
	}
	res.Summary = summarize(res.Rows)
	return res, nil
}

// summarize counts the rows by verdict.
func summarize(rows []Row) Summary {
	var s Summary
	for _, r := range rows {
		switch r.Verdict {
		case stats.VerdictBetter:
			s.Better++
		case stats.VerdictWorse:
			s.Worse++
		case stats.VerdictNone:
			s.NoDifference++
		case stats.VerdictUntestable:
			s.Untestable++
		default:
			s.NA++
		}
	}
	return s
}

// load resolves a side and returns its samples. which is "A" or "B", for error messages.
func load(ctx context.Context, src export.Source, which string, side Side) (Resolved, []record.Sample, error) {
	b, err := export.Load(ctx, src, side.Run)
	if err != nil {
		return Resolved{}, nil, fmt.Errorf("%s %q: %w", which, side, err)
	}
	names := make([]string, len(b.Targets))
	for i, t := range b.Targets {
		names[i] = t.Name
	}
	var target *record.Target
	switch {
	case side.Target != "":
		for i := range b.Targets {
			if b.Targets[i].Name == side.Target {
				target = &b.Targets[i]
			}
		}
		if target == nil {
			return Resolved{}, nil, fmt.Errorf("%s %q: run %s has no target %q (targets: %s)",
				which, side, b.Run.ID, side.Target, strings.Join(names, ", "))
		}
	case len(b.Targets) == 1:
		target = &b.Targets[0]
	case len(b.Targets) == 0:
		return Resolved{}, nil, fmt.Errorf("%s %q: run %s has no targets", which, side, b.Run.ID)
	default:
		return Resolved{}, nil, fmt.Errorf("%s %q: run %s has %d targets (%s); name one as %s/TARGET",
			which, side, b.Run.ID, len(b.Targets), strings.Join(names, ", "), b.Run.ID)
	}
	var samples []record.Sample
	for _, s := range b.Samples {
		if s.Target == target.Name {
			samples = append(samples, s)
		}
	}
	fp := target.Fingerprint
	if fp == nil {
		fp = map[string]string{}
	}
	return Resolved{Run: b.Run.ID, Target: target.Name, Started: b.Run.Started, Status: b.Run.Status, Fingerprint: fp},
		samples, nil
}

// key is one metric of one cell.
type key struct {
	cell   Cell
	metric string
}

// side holds one side's values by key, each with its block (run and round), and its failed
// samples by cell.
type side struct {
	values map[key][]stats.Obs
	failed map[Cell]int
}

// collect groups a side's measured, successful values, in Seq order, the way
// report.Summarize does, so the means here are those `results show` prints.
func collect(samples []record.Sample) side {
	s := side{values: map[key][]stats.Obs{}, failed: map[Cell]int{}}
	for _, x := range samples {
		c := Cell{Path: x.Path, Workload: x.Workload, Pairs: x.Cell().Pairs}
		switch {
		case x.Warmup:
		case x.Error != "":
			s.failed[c]++
		default:
			for _, m := range []map[string]float64{x.Metrics, x.Resources} {
				for name, v := range m {
					s.values[key{c, name}] = append(s.values[key{c, name}], stats.Obs{Block: x.Block(), Value: v})
				}
			}
		}
	}
	return s
}

// checkMetrics rejects a --metrics name that neither side has, listing those they do.
func checkMetrics(wanted []string, a, b side) error {
	have := map[string]bool{}
	for _, s := range []side{a, b} {
		for k := range s.values {
			have[k.metric] = true
		}
	}
	for _, m := range wanted {
		if !have[m] {
			names := make([]string, 0, len(have))
			for n := range have {
				names = append(names, n)
			}
			sort.Strings(names)
			return &setting.Error{Name: "metrics", Value: strconv.Quote(m), Want: "neither side has this metric (they have: " + strings.Join(names, ", ") + ")"}
		}
	}
	return nil
}

// unmatched returns the cells x measured that y did not, sorted.
func unmatched(x, y side) []Cell {
	inY := map[Cell]bool{}
	for k := range y.values {
		inY[k.cell] = true
	}
	seen := map[Cell]bool{}
	var out []Cell
	for k := range x.values {
		if !inY[k.cell] && !seen[k.cell] {
			seen[k.cell] = true
			out = append(out, k.cell)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		return analysis.Order{Workload: a.Workload, Pairs: a.Pairs, Path: a.Path}.Compare(
			analysis.Order{Workload: b.Workload, Pairs: b.Pairs, Path: b.Path}) < 0
	})
	return out
}

// newRow is a row of one metric of one cell with nothing computed yet: its figures NaN, no
// verdict, and what the catalogue says of the metric (unit, direction, difference scale).
func newRow(k key, na, nb int) Row {
	nan := math.NaN()
	r := Row{Path: k.cell.Path, Workload: k.cell.Workload, Pairs: k.cell.Pairs, Metric: k.metric, NA: na, NB: nb,
		Ratio: nan, RatioLow: nan, RatioHigh: nan, PValue: nan, U: nan, PAdjusted: nan, MDE: nan, Verdict: VerdictNA,
		Est: stats.Estimate{Center: nan, SE: nan, DF: nan}}
	if catalog.Points(k.metric) {
		r.Points, r.Diff, r.DiffLow, r.DiffHigh = true, nan, nan, nan
	}
	if spec, known := catalog.Lookup(k.metric); known {
		r.Unit, r.Direction = spec.Unit, "lower"
		if spec.HigherIsBetter {
			r.Direction = "higher"
		}
	}
	return r
}

// compareRow compares one metric of one cell.
func compareRow(k key, oa, ob []stats.Obs, failedA, failedB int, pairing stats.Pairing, opts stats.CompareOptions) Row {
	xa, xb := stats.Values(oa), stats.Values(ob)
	r := newRow(k, len(xa), len(xb))
	r.FailedA, r.FailedB, r.MeanA, r.MeanB = failedA, failedB, stats.Summarize(xa).Mean, stats.Summarize(xb).Mean
	// The common reasons stats.Compare refuses are checked here first, to explain them in
	// terms of the sides rather than of its arguments.
	switch {
	case len(xa) < 2 || len(xb) < 2:
		r.Note = fmt.Sprintf("needs at least 2 samples per side, has %d and %d", len(xa), len(xb))
		return r
	case r.MeanA == 0 && !r.Points:
		r.Note = "mean of A is 0: no ratio"
		return r
	}
	// The direction only turns the outcome into a verdict, so a metric of unknown direction
	// still gets its ratio, interval and p-value.
	compare := stats.CompareBlocked
	if r.Points {
		compare = stats.ComparePoints
	}
	c, err := compare(oa, ob, r.Direction != "lower", pairing, opts)
	if err != nil {
		r.Note = strings.TrimPrefix(err.Error(), "stats: ")
		return r
	}
	r.Ratio, r.RatioLow, r.RatioHigh, r.PValue, r.U, r.Exact, r.MDE = c.Ratio, c.RatioLow, c.RatioHigh, c.PValue, c.U, c.Exact, c.MDE
	r.Paired, r.Est, r.Blocks = c.Paired, c.Est, min(len(xa), len(xb))
	r.margin = c.Margin
	if c.Paired && c.NA > 0 {
		r.Blocks = c.NA // the complete rounds
	}
	if c.Points {
		r.Diff, r.DiffLow, r.DiffHigh = c.Diff, c.DiffLow, c.DiffHigh
	}
	if r.Direction == "" {
		r.Note = "unknown metric: no direction of improvement"
		return r
	}
	r.Verdict = c.Verdict
	return r
}

// adjust adjusts the p-values of the rows that carry a verdict and withdraws the verdicts
// whose adjusted p-value is no longer below alpha. The families fit the question a
// comparison answers: in each cell the headline metric (analysis.VerdictMetric: throughput,
// connection rate, p50 latency, UDP's loss...) is the question and is tested alone at alpha, as
// the gate asks it; the cell's other metrics (CPU costs, percentiles, steal) are one family
// adjusted among themselves. Adjusting the headline together with a dozen secondary metrics let
// a lone 22 % throughput drop at 5 against 5 (raw p 0.008) pass as "no significant difference".
// The interval half of a verdict stays at its level: a verdict needs both, so it is never given
// more often than the adjusted test alone would give it.
func adjust(rows []Row, method string, alpha float64) error {
	type family struct {
		cell     Cell
		headline bool
	}
	inCell := map[Cell]map[string]bool{}
	for i, r := range rows {
		rows[i].PAdjusted = math.NaN()
		if r.Verdict != VerdictNA {
			c := Cell{Path: r.Path, Workload: r.Workload, Pairs: r.Pairs}
			if inCell[c] == nil {
				inCell[c] = map[string]bool{}
			}
			inCell[c][r.Metric] = true
		}
	}
	families := map[family][]int{}
	for i, r := range rows {
		if r.Verdict == VerdictNA {
			continue
		}
		c := Cell{Path: r.Path, Workload: r.Workload, Pairs: r.Pairs}
		f := family{cell: c, headline: r.Metric == analysis.VerdictMetric(r.Workload, inCell[c])}
		families[f] = append(families[f], i)
	}
	for f, idx := range families {
		if err := adjustFamily(rows, idx, method, alpha); err != nil {
			return fmt.Errorf("adjust the p-values of %s %s: %w", f.cell.label(), f.cell.Path, err)
		}
	}
	return nil
}

// adjustFamily adjusts one family's p-values, withdraws the verdicts the adjusted p no longer
// supports, and calls untestable the rows whose smallest attainable p (the exact rank test's
// floor at their sample sizes) could not reach alpha in this family whatever their data: a
// family of twelve rank tests at 5 against 5 floors at 0.095 under Holm.
func adjustFamily(rows []Row, idx []int, method string, alpha float64) error {
	p, minP := make([]float64, len(idx)), make([]float64, len(idx))
	for j, i := range idx {
		p[j] = rows[i].PValue
		if !rows[i].Paired && !rows[i].Points && !rows[i].Pooled {
			minP[j] = stats.MinAttainableP(rows[i].NA, rows[i].NB)
		}
	}
	adj, err := stats.AdjustPValues(p, method)
	if err != nil {
		return err
	}
	floor, err := stats.AdjustedFloor(p, minP, method)
	if err != nil {
		return err
	}
	for j, i := range idx {
		rows[i].PAdjusted = adj[j]
		if (rows[i].Verdict == stats.VerdictBetter || rows[i].Verdict == stats.VerdictWorse) && !(adj[j] < alpha) {
			rows[i].Verdict = stats.VerdictNone
		}
		if rows[i].Verdict == stats.VerdictNone && floor[j] >= alpha {
			rows[i].Verdict = stats.VerdictUntestable
		}
	}
	return nil
}

// diff lists the fingerprint keys whose values differ, by key.
func diff(a, b map[string]string) []Difference {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	var out []Difference
	for k := range keys {
		if a[k] != b[k] {
			out = append(out, Difference{Key: k, A: a[k], B: b[k]})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// sortRows orders rows as `results show` does: by workload, path in suite order, then the
// workload's own metrics in engine order, then the cost figures, then anything else by name.
func sortRows(rows []Row) {
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		// The measured workloads come first; the setup figures (pod startup, Service
		// programming...), measured once per target and round, after them.
		if sa, sb := a.Path == record.SetupPath, b.Path == record.SetupPath; sa != sb {
			return sb
		}
		return analysis.Order{Workload: a.Workload, Pairs: a.Pairs, Path: a.Path, Metric: a.Metric}.Compare(
			analysis.Order{Workload: b.Workload, Pairs: b.Pairs, Path: b.Path, Metric: b.Metric}) < 0
	})
}

// label is the row's workload with its concurrency.
func (r Row) label() string { return Cell{Workload: r.Workload, Pairs: r.Pairs}.label() }
