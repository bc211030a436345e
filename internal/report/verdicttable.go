package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/cnibench/cnibench/internal/analysis"
	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/suite"
)

// VerdictRow is one entry of a verdict line as a table shows it: the terminal and the HTML
// page print the same cells.
type VerdictRow struct {
	Name, Mean, CI, Ratio, Verdict, N string
	// Decided marks a better or worse verdict, which a page may emphasise.
	Decided bool
}

// Title names what a verdict line compares: the workload, where, and the metric with its unit
// and direction.
func lineTitle(l analysis.VerdictLine) string {
	label := record.Cell{Workload: l.Workload, Pairs: l.Pairs}.WorkloadLabel()
	where := "by path"
	if l.Path != "" {
		where = "on " + l.Path
	}
	return fmt.Sprintf("%s %s: %s [%s, %s]", label, where, l.Metric, l.Unit, direction(l.HigherIsBetter))
}

// Table is the line's entries as rows, best first.
func lineTable(l analysis.VerdictLine) []VerdictRow {
	rows := make([]VerdictRow, 0, len(l.Entries))
	for _, e := range l.Entries {
		r := VerdictRow{Name: e.Target, Mean: analysis.Num(e.Mean), CI: ciOf(e.Summary), Ratio: relation(e),
			Verdict: entryVerdict(e, l.Margin), N: fmt.Sprintf("n=%d", e.Summary.N), Decided: e.Verdict == "better" || e.Verdict == "worse"}
		switch {
		case e.Verdict == "reference" && l.Path == "":
			r.Verdict = "baseline"
		case e.Target == suite.Localhost && !l.HigherIsBetter:
			// Inside one pod: what the machine itself costs a request, the floor of every
			// path's figure beside it.
			r.Verdict += " (floor)"
		}
		if e.Summary.Bimodal {
			r.Verdict += ", bimodal"
		}
		rows = append(rows, r)
	}
	return rows
}

// entryVerdict is how an entry compares with the reference, in words; margin is the run's
// equivalence margin (0: none).
func entryVerdict(e analysis.Ranked, margin float64) string {
	switch e.Verdict {
	case "best", "reference":
		return e.Verdict
	case analysis.NotSignificant:
		// What more rounds would buy starts from what these could have seen.
		return fmt.Sprintf("n.s.%s (p=%.2g%s%s)", equivalence(e, margin), e.PValue, pairedMark(e), detectable(e))
	case analysis.Untestable:
		return fmt.Sprintf("untestable at %dv%d", e.NA, e.NB)
	case analysis.Untested:
		return "untested (too few samples)"
	}
	return fmt.Sprintf("%s (p=%.2g%s)", e.Verdict, e.PValue, pairedMark(e))
}

// writeRows prints rows as aligned columns, after indent.
func writeRows(w io.Writer, indent string, rows []VerdictRow) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintf(tw, "%s%s\t%s %s\t%s\t%s\t%s\n", indent, r.Name, r.Mean, r.CI, r.Ratio, r.Verdict, r.N)
	}
	_ = tw.Flush()
}

// splitSetup separates the lines of setup figures (pod startup, Service programming...), which
// the run measures per target rather than per path, from the measured workloads'.
func splitSetup(lines []analysis.VerdictLine) (measured, setup []analysis.VerdictLine) {
	for _, l := range lines {
		if l.IsSetup() {
			setup = append(setup, l)
		} else {
			measured = append(measured, l)
		}
	}
	return measured, setup
}

// writeSetup prints the setup figures: with one target a row per figure, with several a table
// per figure, as the measured workloads have.
func writeSetup(w io.Writer, lines []analysis.VerdictLine) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, l := range lines {
		if l.Path == "" {
			e := l.Entries[0]
			fmt.Fprintf(tw, "  %s\t%s\t%s %s %s\tn=%d\n", l.Workload, l.Metric, analysis.Num(e.Mean), l.Unit, ciOf(e.Summary), e.Summary.N)
		}
	}
	_ = tw.Flush()
	for _, l := range lines {
		if l.Path != "" {
			fmt.Fprintf(w, "  %s: %s [%s, %s]\n", l.Workload, l.Metric, l.Unit, direction(l.HigherIsBetter))
			writeRows(w, "    ", lineTable(l))
		}
	}
}

// htmlVerdict is one verdict line of the HTML page's verdict table.
type htmlVerdict struct {
	Title string
	Rows  []VerdictRow
}

// htmlVerdicts lays out a run's verdict lines for the page's table, measured workloads first,
// each title prefixed with run (empty for a page of one run).
func htmlVerdicts(run string, lines []analysis.VerdictLine) []htmlVerdict {
	measured, setup := splitSetup(lines)
	var out []htmlVerdict
	for _, l := range append(measured, setup...) {
		title := lineTitle(l)
		if l.IsSetup() {
			title = "setup: " + title
		}
		out = append(out, htmlVerdict{Title: run + title, Rows: lineTable(l)})
	}
	return out
}
