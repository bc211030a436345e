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
	fmt.Fprintln(w, "\nranking (best first; x = mean relative to the best, pp = difference in percentage points for loss; 'n.s.' = not significantly different from the best; p: paired t on the per-round log ratios (loss: differences) where every round measured both ('paired'), else Mann-Whitney U (loss: Welch's t), Holm-adjusted over the line; 'untestable at 3v3' = no data could reach p < 0.05 at those samples):")
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

// relation is how an entry stands to the reference: the ratio of the means ("x0.86"), or for
// a figure compared on the difference scale the difference in percentage points ("+0.31 pp").
func relation(e analysis.Ranked) string {
	if e.Points {
		if e.Verdict == "best" || e.Verdict == "reference" {
			return "+0 pp"
		}
		return fmt.Sprintf("%+.2g pp", e.Diff)
	}
	return fmt.Sprintf("x%.2f", e.RatioToBest)
}

// detectable is what a comparison could have detected: a relative difference, or points.
func detectable(e analysis.Ranked) string {
	if e.Points {
		return fmt.Sprintf("%.2g pp", e.MDE)
	}
	return fmt.Sprintf("%.2g %%", e.MDE*100)
}

// entryText is one entry of a ranking or verdict line: mean, interval and how it compares.
func entryText(e analysis.Ranked) string {
	part := fmt.Sprintf("%s %s %s", e.Target, analysis.Num(e.Mean), ciOf(e.Summary))
	switch e.Verdict {
	case "best", "reference":
	case analysis.NotSignificant:
		part += fmt.Sprintf(" %s n.s. (p=%.2g%s)", relation(e), e.PValue, pairedMark(e))
	case analysis.Untestable:
		part += fmt.Sprintf(" %s untestable at %dv%d", relation(e), e.NA, e.NB)
	case analysis.Untested:
		part += fmt.Sprintf(" %s untested (too few samples)", relation(e))
	default:
		part += fmt.Sprintf(" %s %s (p=%.2g%s)", relation(e), e.Verdict, e.PValue, pairedMark(e))
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
