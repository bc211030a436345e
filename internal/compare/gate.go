package compare

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/internal/analysis"
	"github.com/cnibench/cnibench/internal/stats"
)

// Gate turns a comparison into a pass or a fail, for a pipeline that must not merge a
// regression (a CNI upgrade, a new kernel): it fails when a headline metric of B is
// significantly worse than A's by more than Tolerance.
type Gate struct {
	// Tolerance is the largest accepted relative worsening of a headline metric's mean,
	// e.g. 0.05: a throughput ratio B/A below 0.95 or a latency ratio above 1.05.
	Tolerance float64
}

// FailOnValues are the values of the --fail-on flag.
func FailOnValues() []string { return []string{"never", "worse"} }

// ParseTolerance reads a tolerance written as a percentage ("5%") or a fraction ("0.05").
func ParseTolerance(s string) (float64, error) {
	v, pct := strings.CutSuffix(strings.TrimSpace(s), "%")
	f, err := strconv.ParseFloat(v, 64)
	if pct {
		f /= 100
	}
	if err != nil || f < 0 || f >= 1 {
		return 0, fmt.Errorf("%q: expected a percentage from 0%% to below 100%%, e.g. 5%%", s)
	}
	return f, nil
}

// Regressions are the rows that fail the gate: headline metrics whose verdict is "worse" (the
// interval of the ratio excludes 1 and the adjusted p-value is below alpha) and whose ratio
// of means is worse than the tolerance allows.
func (g Gate) Regressions(res Result) []Row {
	var out []Row
	for _, r := range res.Rows {
		if r.Verdict != stats.VerdictWorse || !analysis.Headline(analysis.Row{Metric: r.Metric, Pairs: r.Pairs}) {
			continue
		}
		// On the difference scale (loss) the tolerance is read in points: 5 % allows 5 pp.
		if r.Points && math.Abs(r.Diff) > g.Tolerance*100 {
			out = append(out, r)
			continue
		}
		if !r.Points && ((r.Direction == "higher" && r.Ratio < 1-g.Tolerance) || (r.Direction == "lower" && r.Ratio > 1+g.Tolerance)) {
			out = append(out, r)
		}
	}
	return out
}

// Check returns an error listing the regressions, nil when there are none.
func (g Gate) Check(res Result) error {
	regs := g.Regressions(res)
	if len(regs) == 0 {
		return nil
	}
	lines := make([]string, len(regs))
	for i, r := range regs {
		lines[i] = fmt.Sprintf("  %s %s %s: B/A %s %s, p %.2g", r.Path, Cell{Workload: r.Workload, Pairs: r.Pairs}.label(),
			r.Metric, relColumn(r), ciColumn(r, ", "), r.PAdjusted)
	}
	return fmt.Errorf("%d headline metric(s) of %s significantly worse than %s by more than %.3g%%:\n%s",
		len(regs), res.B.Label(), res.A.Label(), g.Tolerance*100, strings.Join(lines, "\n"))
}
