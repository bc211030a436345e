package compare

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// WriteGate renders the gate's judgement after the comparison: its verdict first, then one
// line per gated metric with what it could catch.
func WriteGate(w io.Writer, format string, gr GateResult) error {
	var err error
	switch format {
	case FormatJSON:
		err = writeGateJSON(w, gr)
	case FormatMarkdown, "markdown":
		err = writeGateText(w, gr, "- ")
	default:
		err = writeGateText(w, gr, "  ")
	}
	if err != nil {
		return fmt.Errorf("write gate: %w", err)
	}
	return nil
}

// Headline is the gate's one-line verdict.
func (gr GateResult) Headline() string {
	failed, weak := 0, 0
	for _, r := range gr.Rows {
		if r.Failed {
			failed++
		}
		if r.Weak {
			weak++
		}
	}
	switch gr.Outcome {
	case GateFail:
		return fmt.Sprintf("gate: FAIL: %d of %d gated metric(s) worse by more than %s", failed, gr.Family, percent(gr.Tolerance))
	case GateInconclusive:
		return "gate: INCONCLUSIVE: " + strings.TrimPrefix(gr.inconclusive(), "gate inconclusive: ")
	}
	return fmt.Sprintf("gate: pass: none of %d gated metric(s) worse by more than %s, each able to catch %s", gr.Family, percent(gr.Tolerance), percent(gr.Detect))
}

// rule states what the gate tests, in one sentence a reader can check.
func (gr GateResult) rule() string {
	return fmt.Sprintf("fails where B is worse than A by more than %s at a one-sided t test, family-wise %s (Holm over %d tests); "+
		"'could catch' is the worsening caught four times in five at %s/%d (noncentral t), to be at most %s",
		percent(gr.Tolerance), percent(gr.Alpha), gr.Family, percent(gr.Alpha), max(gr.Family, 1), percent(gr.Detect))
}

func writeGateText(w io.Writer, gr GateResult, bullet string) error {
	fmt.Fprintf(w, "\n%s\n%s\n", gr.Headline(), gr.rule())
	if len(gr.Skipped) > 0 {
		names := make([]string, len(gr.Skipped))
		for i, r := range gr.Skipped {
			names[i] = r.Workload + " " + r.Metric
		}
		fmt.Fprintf(w, "not gated, one sample a side (run --pods round measures them every round): %s\n", strings.Join(names, ", "))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range gr.Rows {
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\t%s\n", bullet, gateStatus(r), r.Row.Path, r.Row.label(), r.Row.Metric, gateDetail(r))
	}
	return tw.Flush()
}

func gateStatus(r GateRow) string {
	switch {
	case r.Failed:
		return "FAIL"
	case r.Weak:
		return "weak"
	}
	return "ok"
}

// gateDetail is a gated row's estimate, test and power.
func gateDetail(r GateRow) string {
	if math.IsNaN(r.P) {
		note := r.Row.Note
		if note == "" {
			note = "no estimate"
		}
		return "untested: " + note
	}
	s := fmt.Sprintf("%s worse, p %s (adj %s)", worsening(r, r.Worse), pvalue(r.P), pvalue(r.PAdjusted))
	if !r.Failed {
		s += ", could catch " + worsening(r, r.Detectable)
		if r.Weak && r.Rounds > 0 {
			s += fmt.Sprintf(": %d rounds would catch the gate's size", r.Rounds)
		}
	}
	return s
}

// worsening writes a worsening on the row's scale: "7.1 %", or "0.3 pp" for Points.
func worsening(r GateRow, v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "nothing"
	case r.Row.Points:
		return fmt.Sprintf("%.3g pp", v)
	}
	return fmt.Sprintf("%.3g %%", v*100)
}

// gateLine is a failed row as the error lists it.
func gateLine(r GateRow) string {
	return fmt.Sprintf("%s %s %s: %s worse (B/A %s %s), p %s adjusted", r.Row.Path, r.Row.label(), r.Row.Metric,
		worsening(r, r.Worse), relColumn(r.Row), ciColumn(r.Row, ", "), pvalue(r.PAdjusted))
}

// gateJSON is a GateResult as JSON.
type gateJSON struct {
	Outcome   string        `json:"outcome"`
	Headline  string        `json:"headline"`
	Tolerance float64       `json:"tolerance"`
	Detect    float64       `json:"detect"`
	Alpha     float64       `json:"alpha"`
	Family    int           `json:"family"`
	Method    string        `json:"method"`
	Rows      []gateRowJSON `json:"rows"`
}

type gateRowJSON struct {
	Path       string   `json:"path"`
	Workload   string   `json:"workload"`
	Pairs      int      `json:"pairs"`
	Metric     string   `json:"metric"`
	Points     bool     `json:"points"`
	Worse      *float64 `json:"worse"`
	P          *float64 `json:"p"`
	PAdjusted  *float64 `json:"p_adjusted"`
	Detectable *float64 `json:"detectable"`
	Rounds     int      `json:"rounds_to_detect,omitempty"`
	Failed     bool     `json:"failed"`
	Weak       bool     `json:"weak"`
}

func writeGateJSON(w io.Writer, gr GateResult) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(newGateJSON(gr))
}

// newGateJSON is the JSON form of a gate's judgement.
func newGateJSON(gr GateResult) gateJSON {
	doc := gateJSON{Outcome: gr.Outcome, Headline: gr.Headline(), Tolerance: gr.Tolerance, Detect: gr.Detect,
		Alpha: gr.Alpha, Family: gr.Family, Method: gr.rule(), Rows: []gateRowJSON{}}
	for _, r := range gr.Rows {
		doc.Rows = append(doc.Rows, gateRowJSON{Path: r.Row.Path, Workload: r.Row.Workload, Pairs: r.Row.Pairs,
			Metric: r.Row.Metric, Points: r.Row.Points, Worse: finite(r.Worse), P: finite(r.P), PAdjusted: finite(r.PAdjusted),
			Detectable: finite(r.Detectable), Rounds: r.Rounds, Failed: r.Failed, Weak: r.Weak})
	}
	return doc
}
