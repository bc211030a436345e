package analysis

import "math"

// ForestRow is one comparison of a ranking as a forest plot draws it: an entry against its
// line's reference, the estimate and its 95 % interval on the scale the comparison was made.
type ForestRow struct {
	Workload string `json:"workload"`
	Pairs    int    `json:"pairs"`
	// Path is the line's path; empty where the line compares the paths of one target.
	Path   string `json:"path,omitempty"`
	Metric string `json:"metric"`
	Unit   string `json:"unit"`
	// Name is the compared target (or path), Against the reference it is compared with.
	Name    string `json:"name"`
	Against string `json:"against"`
	// Points says Estimate, Low and High are a difference of the means in the metric's unit
	// (catalog.Points: UDP loss), with no difference at 0; otherwise they are the ratio of the
	// means, with no difference at 1.
	Points   bool    `json:"points,omitempty"`
	Estimate float64 `json:"estimate"`
	// Low and High bound the estimate's 95 % interval, unadjusted; NaN where no comparison
	// could be made.
	Low  float64 `json:"-"`
	High float64 `json:"-"`
	// Verdict is the entry's (Ranked.Verdict): "better" and "worse" are significant after
	// Holm's adjustment, the others not.
	Verdict        string `json:"verdict"`
	HigherIsBetter bool   `json:"higherIsBetter"`
}

// Significant says the row's verdict is a significant difference from the reference.
func (r ForestRow) Significant() bool { return r.Verdict == "better" || r.Verdict == "worse" }

// Forest lays out the comparisons of the lines for a forest plot, in the lines' order and each
// line's entries best first: one row per entry other than the reference, with the figures the
// ranking's table prints (Ranked.RatioToBest and its interval, or for a metric on the
// difference scale Ranked.Diff and its). Entries without an estimate (a reference mean of 0)
// are left out.
func Forest(lines []VerdictLine) []ForestRow {
	var out []ForestRow
	for _, l := range lines {
		for _, e := range l.Entries {
			if e.Target == l.Against {
				continue
			}
			r := ForestRow{Workload: l.Workload, Pairs: l.Pairs, Path: l.Path, Metric: l.Metric, Unit: l.Unit, Name: e.Target,
				Against: l.Against, Points: e.Points, Estimate: e.RatioToBest, Low: e.RatioLow, High: e.RatioHigh, Verdict: e.Verdict,
				HigherIsBetter: l.HigherIsBetter}
			if e.Points {
				r.Estimate, r.Low, r.High = e.Diff, e.DiffLow, e.DiffHigh
			}
			if math.IsNaN(r.Estimate) || math.IsInf(r.Estimate, 0) {
				continue
			}
			out = append(out, r)
		}
	}
	return out
}
