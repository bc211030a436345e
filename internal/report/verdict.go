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
	fmt.Fprintln(w, "[95 % CI]; x = ratio of the means to the reference's, pp = difference in percentage points")
	fmt.Fprintln(w, "(loss); p: paired t on the per-round differences where rounds measured both ('paired', the")
	fmt.Fprintln(w, "rounds one side missed left out), else Mann-Whitney U (loss: Welch's t), Holm-adjusted;")
	fmt.Fprintln(w, "could detect: the difference called 4 times in 5 at the adjusted level")
	if note := marginNote(lines); note != "" {
		fmt.Fprintln(w, note)
	}
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
	return fmt.Sprintf("untestable: at these samples no data could reach p < %g; %d samples a side can (repetitions: %d, or a precision target)",
		stats.DefaultAlpha, need, need)
}

// marginNote states the equivalence margin of a run with a precision target, where one of its
// lines is compared: its loop stopped a comparison shown within it ("within ±2 %"), and the
// reader needs the margin to read that. Empty for a run without one.
func marginNote(lines []analysis.VerdictLine) string {
	m := 0.0
	for _, l := range lines {
		m = max(m, l.Margin)
	}
	if m == 0 {
		return ""
	}
	pct := analysis.Pct(m * 100)
	return fmt.Sprintf("within: shown equivalent to the reference at the precision loop's margin, ±%s %% of the ratio\n"+
		"(loss: ±%s pp up to 0.5 %% loss, ±%s %% of the loss level above), by two one-sided tests at a\n"+
		"level spent over the rounds (at most 5 %% over all the loop's looks)", pct, analysis.Pct(analysis.PointsMargin(m, 0)),
		analysis.Pct(((1+m)*(1+m)-1)*100))
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
