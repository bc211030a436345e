package report

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/cnibench/cnibench/internal/analysis"
	"github.com/cnibench/cnibench/internal/record"
)

// rankingLegend says what a ranking line's figures are.
const rankingLegend = "\nranking (best first; x = ratio of the means to the best's, pp = difference in percentage points for loss; " +
	"'n.s.' = not significantly different from the best; p: paired t on the per-round differences where rounds measured both " +
	"('paired', with the rounds left out that did not), else Mann-Whitney U (loss: Welch's t), Holm-adjusted over every pair; " +
	"n = samples of the best v this one; 'could detect' = the difference called 4 times in 5 at Holm's first-step level, alpha/pairs; " +
	"'untestable at 3v3' = no data could reach p < 0.05 at those samples):"

// WriteRanking prints the rankings, one line per path, workload and metric.
func WriteRanking(w io.Writer, groups []analysis.RankGroup) {
	if len(groups) == 0 {
		return
	}
	fmt.Fprintln(w, rankingLegend)
	for _, g := range groups {
		dir := direction(g.HigherIsBetter)
		var parts []string
		for _, e := range g.Entries {
			parts = append(parts, entryText(e, g.Margin))
		}
		label := record.Cell{Workload: g.Workload, Pairs: g.Pairs}.WorkloadLabel()
		fmt.Fprintf(w, "  %-22s %-14s %s [%s, %s]: %s\n", label, g.Path, g.Metric, g.Unit, dir, strings.Join(parts, " | "))
	}
}

// pairedMark notes a comparison paired by round, and the rounds it left out.
func pairedMark(e analysis.Ranked) string {
	switch {
	case !e.Paired:
		return ""
	case e.Dropped == 1:
		return ", paired, 1 round left out"
	case e.Dropped > 1:
		return fmt.Sprintf(", paired, %d rounds left out", e.Dropped)
	}
	return ", paired"
}

// relation is how an entry stands to the reference: the ratio of the means ("x0.86"), or for
// a figure compared on the difference scale the difference in percentage points ("+0.31 pp").
func relation(e analysis.Ranked) string {
	if e.Points {
		if e.Verdict == "best" || e.Verdict == "reference" {
			return "+0 pp"
		}
		sign := "+"
		if e.Diff < 0 {
			sign = ""
		}
		return sign + analysis.Pct(e.Diff) + " pp"
	}
	return fmt.Sprintf("x%.2f", e.RatioToBest)
}

// detectable is what a comparison could have detected, "" where that is unknown or nothing: a
// relative difference, or points.
func detectable(e analysis.Ranked) string {
	switch {
	case !(e.MDE > 0) || math.IsInf(e.MDE, 0):
		return ""
	case e.Points:
		return ", could detect " + analysis.Pct(e.MDE) + " pp"
	}
	return ", could detect " + analysis.Pct(e.MDE*100) + " %"
}

// equivalence is the verdict's addition for an entry shown within the run's margin of the
// reference (analysis.Equivalent), "" otherwise or without a margin.
func equivalence(e analysis.Ranked, margin float64) string {
	if !analysis.Equivalent(e, margin) {
		return ""
	}
	return ", within " + analysis.MarginText(e, margin)
}

// entryText is one entry of a ranking line: mean, interval and how it compares, with the
// samples behind the comparison.
func entryText(e analysis.Ranked, margin float64) string {
	part := fmt.Sprintf("%s %s %s", e.Target, analysis.Num(e.Mean), ciOf(e.Summary))
	n := fmt.Sprintf("n=%dv%d", e.NA, e.NB)
	switch e.Verdict {
	case "best", "reference":
	case analysis.NotSignificant:
		part += fmt.Sprintf(" %s n.s.%s (p=%.2g, %s%s%s)", relation(e), equivalence(e, margin), e.PValue, n, pairedMark(e), detectable(e))
	case analysis.Untestable:
		part += fmt.Sprintf(" %s untestable at %dv%d", relation(e), e.NA, e.NB)
	case analysis.Untested:
		part += fmt.Sprintf(" %s untested (too few samples)", relation(e))
	default:
		part += fmt.Sprintf(" %s %s (p=%.2g, %s%s)", relation(e), e.Verdict, e.PValue, n, pairedMark(e))
	}
	if e.Summary.Bimodal {
		part += " bimodal"
	}
	return part
}

// direction says which way a metric is better.
func direction(higher bool) string {
	if higher {
		return "higher is better"
	}
	return "lower is better"
}
