package compare

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/cnibench/cnibench/internal/export"
	"github.com/cnibench/cnibench/internal/label"
	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/setting"
	"github.com/cnibench/cnibench/internal/stats"
	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Lister is a store that lists its runs as well as serving them.
type Lister interface {
	export.Source
	Runs(ctx context.Context) ([]record.Run, error)
}

// PoolOptions selects a pooled comparison: run B against the last stored runs matching a
// label selector.
type PoolOptions struct {
	B Side
	// Selector picks the baseline runs by their labels; Last is how many of the newest that
	// started before B's run are pooled (DefaultLast when 0).
	Selector label.Selector
	Last     int
	Metrics  []string
}

// DefaultLast is how many baseline runs a pooled comparison takes unless told otherwise.
const DefaultLast = 10

// MinPool is the fewest baseline runs a pooled comparison accepts: with fewer, the spread
// between runs, which is its whole noise model, is barely estimated.
const MinPool = 3

// ComparePooled compares run B with a baseline pooled from the last stored runs matching the
// selector. The unit is a run: each baseline run contributes its mean of each metric, and B's
// mean is tested as one more draw from them, so the variation between runs (a new cluster, a
// neighbour's load on another day) is in the model, not just the noise between rounds: on the
// log scale, t = (log B - mean of the logs of the baseline's means) / (s·sqrt(1 + 1/k)) with k-1
// degrees of freedom, s their standard deviation (a prediction interval). B's target is
// matched by name in each baseline run, or is the run's only target.
func ComparePooled(ctx context.Context, src Lister, o PoolOptions) (Result, error) {
	if o.Last == 0 {
		o.Last = DefaultLast
	}
	if o.Last < MinPool {
		return Result{}, &setting.Error{Name: "last", Value: fmt.Sprint(o.Last), Want: fmt.Sprintf("expected at least %d runs to pool", MinPool)}
	}
	b, sb, err := load(ctx, src, "B", o.B)
	if err != nil {
		return Result{}, err
	}
	pool, err := poolRuns(ctx, src, o, b)
	if err != nil {
		return Result{}, err
	}
	means := map[key][]float64{}
	for _, id := range ids(pool) {
		_, samples, err := load(ctx, src, "baseline", Side{Run: id, Target: b.Target})
		if err != nil {
			if _, only, err2 := load(ctx, src, "baseline", Side{Run: id}); err2 == nil {
				samples = only
			} else {
				return Result{}, err
			}
		}
		for k, obs := range collect(samples).values {
			means[k] = append(means[k], stats.Summarize(stats.Values(obs)).Mean)
		}
	}
	res := Result{B: b, A: Resolved{Run: "pool(" + o.Selector.String() + ")", Target: b.Target, Started: pool[0].Started,
		Status: fmt.Sprintf("%d runs to %s", len(pool), pool[len(pool)-1].ID)}, Alpha: stats.DefaultAlpha, Adjust: DefaultAdjust, Pool: ids(pool)}
	vb := collect(sb)
	if err := checkMetrics(o.Metrics, side{values: map[key][]stats.Obs{}}, vb); err != nil {
		return Result{}, err
	}
	for k, obs := range vb.values {
		if len(o.Metrics) > 0 && !slices.Contains(o.Metrics, k.metric) {
			continue
		}
		if xs, ok := means[k]; ok {
			res.Rows = append(res.Rows, pooledRow(k, xs, stats.Values(obs), vb.failed[k.cell], res.Alpha))
		}
	}
	sortRows(res.Rows)
	if err := adjust(res.Rows, res.Adjust, res.Alpha); err != nil {
		return Result{}, err
	}
	res.Summary = summarize(res.Rows)
	return res, nil
}

// poolRuns are the newest o.Last complete runs matching the selector that started before B's
// run, oldest first.
func poolRuns(ctx context.Context, src Lister, o PoolOptions, b Resolved) ([]record.Run, error) {
	runs, err := src.Runs(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the baseline runs: %w", err)
	}
	var picked []record.Run
	for _, r := range runs {
		if r.ID != b.Run && r.Started.Before(b.Started) && r.Status == record.StatusComplete && o.Selector.Matches(r.Labels) {
			picked = append(picked, r)
		}
	}
	sort.Slice(picked, func(i, j int) bool { return picked[i].Started.After(picked[j].Started) })
	if len(picked) > o.Last {
		picked = picked[:o.Last]
	}
	if len(picked) < MinPool {
		return nil, &setting.Error{Name: "baseline", Value: o.Selector.String(),
			Want: fmt.Sprintf("%d complete run(s) match and started before %s; a pooled baseline needs at least %d", len(picked), b.Run, MinPool)}
	}
	slices.Reverse(picked)
	return picked, nil
}

func ids(runs []record.Run) []string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = r.ID
	}
	return out
}

// pooledRow compares B's mean of one metric with the baseline runs' means xs.
func pooledRow(k key, xs, yb []float64, failedB int, alpha float64) Row {
	r := newRow(k, len(xs), len(yb))
	r.FailedB, r.MeanA, r.MeanB, r.Pooled = failedB, stat.Mean(xs, nil), stat.Mean(yb, nil), true
	if len(xs) < MinPool || len(yb) == 0 {
		r.Note = fmt.Sprintf("needs %d baseline runs and a value of B, has %d and %d", MinPool, len(xs), len(yb))
		return r
	}
	scale := func(v float64) float64 { return math.Log(v) }
	if r.Points {
		scale = func(v float64) float64 { return v }
	} else if r.MeanB <= 0 || minOf(xs) <= 0 {
		r.Note = "a mean of 0: no ratio"
		return r
	}
	e := pooledEstimate(xs, yb, r.MeanB, scale)
	r.Est = e
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: e.DF}
	half := t.Quantile(1-alpha/2) * e.SE
	r.PValue = 1
	if e.SE > 0 {
		r.PValue = 2 * t.Survival(math.Abs(e.Center)/e.SE)
	} else if e.Center != 0 {
		r.PValue = 0
	}
	if r.Points {
		r.Diff, r.DiffLow, r.DiffHigh = e.Center, e.Center-half, e.Center+half
	} else {
		r.Ratio, r.RatioLow, r.RatioHigh = math.Exp(e.Center), math.Exp(e.Center-half), math.Exp(e.Center+half)
	}
	r.MDE = stats.Detectable(e, alpha/2, stats.DefaultPower)
	if !r.Points {
		r.MDE = math.Expm1(r.MDE)
	}
	if r.Direction == "" {
		r.Note = "unknown metric: no direction of improvement"
		return r
	}
	higher := e.Center-half > 0
	lower := e.Center+half < 0
	r.Verdict = stats.VerdictNone
	if higher || lower {
		r.Verdict = stats.VerdictWorse
		if higher == (r.Direction == "higher") {
			r.Verdict = stats.VerdictBetter
		}
	}
	return r
}

// pooledEstimate is B's mean against the baseline runs' means on the tested scale: the
// difference from their mean, with the standard error of a prediction, s²/N for the baseline's
// mean plus B's own variance, which is the larger of the runs' spread s² and what B's rounds
// say of their mean: a run with one round hit by a neighbour is noisier than the baseline's
// runs, and taken at their spread it failed unchanged runs 14 % of the time at the family's
// level (TestPooledBaselineOnAA; 2 % so).
func pooledEstimate(xs, yb []float64, meanB float64, scale func(float64) float64) stats.Estimate {
	logs := make([]float64, len(xs))
	for i, x := range xs {
		logs[i] = scale(x)
	}
	m, s := stat.MeanStdDev(logs, nil)
	own := 0.0
	if len(yb) >= 2 {
		ys := make([]float64, len(yb))
		for i, y := range yb {
			ys[i] = scale(math.Max(y, math.SmallestNonzeroFloat64))
		}
		own = stat.Variance(ys, nil) / float64(len(yb))
	}
	n := float64(len(xs))
	return stats.Estimate{Center: scale(meanB) - m, SE: math.Sqrt(s*s/n + math.Max(s*s, own)), DF: n - 1}
}

func minOf(xs []float64) float64 {
	m := math.Inf(1)
	for _, x := range xs {
		m = math.Min(m, x)
	}
	return m
}
