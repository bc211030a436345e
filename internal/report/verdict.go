package report

import (
	"fmt"
	"io"
	"slices"

	"github.com/cnibench/cnibench/internal/analysis"
	"github.com/cnibench/cnibench/internal/stats"
)

// WriteVerdict prints the verdict: a small table per workload (its headline metric for each
// target or path, best first), then the setup figures in a block of their own, in less than
// 100 columns.
func WriteVerdict(w io.Writer, lines []analysis.VerdictLine) {
	if len(lines) == 0 {
		return
	}
	fmt.Fprintln(w, "\nverdict: each workload's headline metric (UDP: loss at the offered rate), best first; mean")
	fmt.Fprintln(w, "[95 % CI]; x = mean relative to the reference, pp = difference in percentage points (loss);")
	fmt.Fprintln(w, "p: paired t on the per-round log ratios (loss: differences) where every round measured both")
	fmt.Fprintln(w, "('paired'), else Mann-Whitney U (loss: Welch's t)")
	measured, setup := splitSetup(lines)
	for _, l := range measured {
		fmt.Fprintf(w, "\n%s\n", lineTitle(l))
		writeRows(w, "  ", lineTable(l))
	}
	if len(setup) > 0 {
		fmt.Fprintln(w, "\nsetup figures (pods, Services, network readiness):")
		writeSetup(w, setup)
	}
	if note := untestableNote(lines); note != "" {
		fmt.Fprintln(w, note)
	}
}

// untestableNote says what more rounds would buy when some comparison was untestable: the
// fewest samples a side at which the rank test can reach p < 0.05 after adjustment over the
// most comparisons of any line, empty when every comparison could be tested.
func untestableNote(lines []analysis.VerdictLine) string {
	most, family := 0, 1
	for _, l := range lines {
		n := 0
		for _, e := range l.Entries {
			if e.Verdict == analysis.Untestable {
				n++
			}
		}
		if n > most {
			// Against a reference chosen beforehand the family is its k-1 comparisons,
			// against the best picked after the fact every pair (compareWithReference).
			most, family = n, len(l.Entries)*(len(l.Entries)-1)/2
			if slices.ContainsFunc(l.Entries, func(e analysis.Ranked) bool { return e.Verdict == "reference" }) {
				family = len(l.Entries) - 1
			}
		}
	}
	if most == 0 {
		return ""
	}
	need := 2
	for float64(family)*stats.MinAttainableP(need, need) >= stats.DefaultAlpha {
		need++
	}
	return fmt.Sprintf("untestable: at these samples no data could reach p < %g; %d samples a side can (--repetitions %d, or a --precision target)",
		stats.DefaultAlpha, need, need)
}

// Brief prints what a run ends with: its header, the targets' environment and the verdict,
// with where to find the full table.
func Brief(w io.Writer, d Document) error {
	header(w, d)
	WriteVerdict(w, d.Verdict)
	writeReference(w, d.Reference, d.Targets)
	writeProfiles(w, d.Profiles, false)
	if l := IntervalLegend(d.Rows); l != "" {
		fmt.Fprintln(w, l)
	}
	_, err := fmt.Fprintf(w, "\nevery metric: cnibench results show %s (or run with -v)\n", d.Run.ID)
	return err
}
