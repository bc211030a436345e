package analysis

import (
	"cmp"
	"fmt"
	"math"
)

// Num formats a figure the one way every output shows it: three significant digits (a
// 0.1 % difference is the finest these measurements resolve), whole numbers from 1000 up,
// "-" where there is none.
func Num(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "-"
	case math.Abs(v) >= 1000:
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

// Order is what figures are listed by, in every output: workload, concurrency, path in suite
// order, metric in display order; unknown paths and metrics after the known ones, by name.
type Order struct {
	Workload string
	Pairs    int
	Path     string
	Metric   string
}

// Compare returns -1, 0 or +1 as o comes before, with or after p.
func (o Order) Compare(p Order) int {
	return cmp.Or(
		cmp.Compare(o.Workload, p.Workload),
		cmp.Compare(o.Pairs, p.Pairs),
		cmp.Compare(PathRank(o.Path), PathRank(p.Path)),
		cmp.Compare(o.Path, p.Path),
		cmp.Compare(MetricRank(o.Workload, o.Metric), MetricRank(p.Workload, p.Metric)),
		cmp.Compare(o.Metric, p.Metric),
	)
}
