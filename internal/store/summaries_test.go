package store

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/stats"
)

// TestCellSummariesView: the cell_summaries view gives, in both backends, the n, mean,
// standard deviation and t-interval that stats.Summarize computes from the same values, for
// sample sizes on both sides of the t table's end (30 degrees of freedom) and for values whose
// spread is a millionth of their size; warm-up and failed samples are left out, as analysis
// leaves them out, and metrics and resources count alike.
func TestCellSummariesView(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		d := openTest(t, b)
		addRunWithTarget(t, d, "r")
		cells := map[string][]float64{}
		for _, n := range []int{1, 2, 3, 7, 30, 31, 32, 45, 120} {
			xs := make([]float64, n)
			for i := range xs {
				// Deterministic, skewed, not sorted.
				xs[i] = 10 + math.Mod(float64(i*7919%97), 13) + float64(i%3)*0.25
			}
			cells[fmt.Sprintf("n%d", n)] = xs
		}
		cells["large"] = []float64{1e9 + 1000, 1e9 - 500, 1e9 + 250, 1e9 - 750, 1e9}
		cells["constant"] = []float64{4, 4, 4}
		seq := 0
		add := func(s record.Sample) {
			t.Helper()
			s.RunID, s.Seq, s.Target, s.Path = "r", seq, "a", "same-node"
			seq++
			if err := d.AddSample(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
		for workload, xs := range cells {
			add(record.Sample{Warmup: true, Workload: workload, Metrics: map[string]float64{"m": 1e6}})
			add(record.Sample{Round: 1, Workload: workload, Error: "failed", Metrics: map[string]float64{"m": -1e6}})
			for i, x := range xs {
				add(record.Sample{Round: i + 1, Workload: workload, Metrics: map[string]float64{"m": x},
					Resources: map[string]float64{"r": 2 * x}})
			}
		}
		rows, err := d.query(ctx, d.db, `SELECT workload, name, n, mean, stddev, ci_low, ci_high, min_value, max_value
			FROM cell_summaries WHERE run_id = ?`, "r")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		seen := 0
		for rows.Next() {
			var workload, name string
			var n int
			var mean, lo, hi float64
			var sd, ciLow, ciHigh sqlNullFloat
			if err := rows.Scan(&workload, &name, &n, &mean, &sd, &ciLow, &ciHigh, &lo, &hi); err != nil {
				t.Fatal(err)
			}
			seen++
			xs := cells[workload]
			if name == "r" {
				xs = scaled(xs, 2)
			}
			want := stats.Summarize(xs)
			got := stats.Summary{N: n, Mean: mean, StdDev: sd.value(), CILow: ciLow.value(), CIHigh: ciHigh.value(), Min: lo, Max: hi}
			if err := sameSummary(got, want); err != nil {
				t.Errorf("%s %s: %v", workload, name, err)
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if want := 2 * len(cells); seen != want {
			t.Errorf("%d rows, want %d (a metric and a resource per cell)", seen, want)
		}
	})
}

// sqlNullFloat is a nullable DOUBLE PRECISION; value is NaN for NULL, as stats has it.
type sqlNullFloat struct {
	v     float64
	valid bool
}

func (f *sqlNullFloat) Scan(src any) error {
	switch x := src.(type) {
	case nil:
		f.valid = false
	case float64:
		f.v, f.valid = x, true
	case int64:
		f.v, f.valid = float64(x), true
	default:
		return fmt.Errorf("unexpected %T", src)
	}
	return nil
}

func (f sqlNullFloat) value() float64 {
	if !f.valid {
		return math.NaN()
	}
	return f.v
}

func scaled(xs []float64, k float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = k * x
	}
	return out
}

// sameSummary compares the fields the view has: n exactly, the rest within 1e-9 of the
// interval's half-width (the t quantile beyond the table is within 2e-8 of itself), NaN
// where stats has NaN.
func sameSummary(got, want stats.Summary) error {
	if got.N != want.N {
		return fmt.Errorf("n %d, want %d", got.N, want.N)
	}
	scale := math.Max(math.Abs(want.Mean)*1e-12, (want.CIHigh-want.CILow)*1e-7)
	if math.IsNaN(scale) || scale == 0 {
		scale = math.Max(math.Abs(want.Mean)*1e-12, 1e-12)
	}
	for _, f := range []struct {
		name      string
		got, want float64
	}{
		{"mean", got.Mean, want.Mean}, {"stddev", got.StdDev, want.StdDev}, {"ci_low", got.CILow, want.CILow},
		{"ci_high", got.CIHigh, want.CIHigh}, {"min", got.Min, want.Min}, {"max", got.Max, want.Max},
	} {
		if math.IsNaN(f.want) != math.IsNaN(f.got) || math.Abs(f.got-f.want) > scale {
			return fmt.Errorf("%s %v, want %v", f.name, f.got, f.want)
		}
	}
	return nil
}
