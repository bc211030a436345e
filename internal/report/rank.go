package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/cnibench/cnibench/internal/analysis"
	"github.com/cnibench/cnibench/internal/store"
)

// WriteRanking prints the rankings, one line per path, workload and metric.
func WriteRanking(w io.Writer, groups []analysis.RankGroup) {
	if len(groups) == 0 {
		return
	}
	fmt.Fprintln(w, "\nranking (best first; x = mean relative to the best; 'n.s.' = not significantly different from the best; p: paired t on the per-round log ratios where every round measured both ('paired'), else Mann-Whitney U, Holm-adjusted over the line; 'untestable at 3v3' = no data could reach p < 0.05 at those samples):")
	for _, g := range groups {
		dir := direction(g.HigherIsBetter)
		var parts []string
		for _, e := range g.Entries {
			parts = append(parts, entryText(e))
		}
		label := store.Cell{Workload: g.Workload, Pairs: g.Pairs}.WorkloadLabel()
		fmt.Fprintf(w, "  %-22s %-14s %s [%s, %s]: %s\n", label, g.Path, g.Metric, g.Unit, dir, strings.Join(parts, " | "))
	}
}

// pairedMark notes a comparison paired by round.
func pairedMark(e analysis.Ranked) string {
	if e.Paired {
		return ", paired"
	}
	return ""
}

// entryText is one entry of a ranking or verdict line: mean, interval and how it compares.
func entryText(e analysis.Ranked) string {
	part := fmt.Sprintf("%s %s %s", e.Target, analysis.Num(e.Mean), ciOf(e.Summary))
	switch e.Verdict {
	case "best", "reference":
	case analysis.NotSignificant:
		part += fmt.Sprintf(" x%.2f n.s. (p=%.2g%s)", e.RatioToBest, e.PValue, pairedMark(e))
	case analysis.Untestable:
		part += fmt.Sprintf(" x%.2f untestable at %dv%d", e.RatioToBest, e.NA, e.NB)
	case analysis.Untested:
		part += fmt.Sprintf(" x%.2f untested (too few samples)", e.RatioToBest)
	default:
		part += fmt.Sprintf(" x%.2f %s (p=%.2g%s)", e.RatioToBest, e.Verdict, e.PValue, pairedMark(e))
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
