package history

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/cnibench/cnibench/internal/record"
)

// Write renders the series as a table (a verdict line first, then each series with its
// change points) or JSON.
func Write(w io.Writer, format string, series []Series, runs int) error {
	switch format {
	case "json":
		if series == nil {
			series = []Series{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(series); err != nil {
			return fmt.Errorf("write history: %w", err)
		}
		return nil
	case "table":
		return writeTable(w, series, runs)
	}
	return fmt.Errorf("history: format %q: expected table or json", format)
}

// Headline is the one-line verdict of a history: how many series changed, and for the worse.
func Headline(series []Series, runs int) string {
	changed, worse := 0, 0
	for _, s := range series {
		if len(s.Steps) > 0 {
			changed++
		}
		if s.Regressions() > 0 {
			worse++
		}
	}
	return fmt.Sprintf("history of %d run(s): %d series, %d with a change point, %d for the worse", runs, len(series), changed, worse)
}

func writeTable(w io.Writer, series []Series, runs int) error {
	fmt.Fprintln(w, Headline(series, runs))
	for _, s := range series {
		fmt.Fprintf(w, "\n%s %s %s %s [%s], %d runs  %s\n", s.Target, s.Path, workloadLabel(s), s.Metric, s.Unit, len(s.Points), spark(s))
		for _, st := range s.Steps {
			verdict := s.Kind(st)
			if st.Worse {
				verdict = "WORSE"
			}
			fmt.Fprintf(w, "  %s at run %s (%d of %d): %.4g -> %.4g, %s, p %.2g\n", verdict, st.Run, st.Index+1, len(s.Points),
				st.Before, st.After, st.size(s.Unit), st.PValue)
		}
	}
	return nil
}

func workloadLabel(s Series) string {
	return record.Cell{Workload: s.Workload, Pairs: s.Pairs}.WorkloadLabel()
}

// spark draws the series in eight levels between its minimum and maximum, a bar at each
// change point: the step is visible at a glance in a terminal.
func spark(s Series) string {
	const levels = "▁▂▃▄▅▆▇█"
	if len(s.Points) == 0 {
		return ""
	}
	lo, hi := s.Points[0].Mean, s.Points[0].Mean
	for _, p := range s.Points {
		lo, hi = min(lo, p.Mean), max(hi, p.Mean)
	}
	at := map[int]bool{}
	for _, st := range s.Steps {
		at[st.Index] = true
	}
	var b strings.Builder
	runes := []rune(levels)
	for i, p := range s.Points {
		if at[i] {
			b.WriteRune('|')
		}
		k := 0
		if hi > lo {
			k = int((p.Mean - lo) / (hi - lo) * float64(len(runes)-1))
		}
		b.WriteRune(runes[k])
	}
	return b.String()
}

// ChangeError is the error of `history --fail-on-change`: the series that changed for the worse.
type ChangeError struct{ Series []Series }

func (e *ChangeError) Error() string {
	var lines []string
	for _, s := range e.Series {
		st := s.Steps[len(s.Steps)-1]
		lines = append(lines, fmt.Sprintf("  %s %s %s %s: %s from run %s on", s.Target, s.Path, workloadLabel(s), s.Metric, st.size(s.Unit), st.Run))
	}
	return fmt.Sprintf("%d series changed for the worse:\n%s", len(e.Series), strings.Join(lines, "\n"))
}

// Check returns a *ChangeError naming the series whose latest change point is for the worse,
// nil when none's is: a series that regressed and recovered since is back where it was, and a
// CI judging its newest run fails for the level it is at now.
func Check(series []Series) error {
	var bad []Series
	for _, s := range series {
		if n := len(s.Steps); n > 0 && s.Steps[n-1].Worse {
			bad = append(bad, s)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return &ChangeError{Series: bad}
}
