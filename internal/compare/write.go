package compare

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/cnibench/cnibench/internal/analysis"
	"github.com/cnibench/cnibench/internal/mdtext"
	"github.com/cnibench/cnibench/internal/setting"
	"github.com/cnibench/cnibench/internal/stats"
)

// Output formats accepted by Write.
const (
	FormatTable    = "table"
	FormatMarkdown = "md"
	FormatJSON     = "json"
)

// Formats lists the output formats, for help texts and error messages.
func Formats() []string { return []string{FormatTable, FormatMarkdown, FormatJSON} }

// Write renders res as a terminal table, Markdown or JSON.
func Write(w io.Writer, format string, res Result) error {
	var err error
	switch format {
	case FormatTable:
		err = writeTable(w, res)
	case FormatMarkdown, "markdown":
		err = writeMarkdown(w, res)
	case FormatJSON:
		err = writeJSON(w, res)
	default:
		return &setting.Error{Name: "output", Value: fmt.Sprintf("%q", format), Want: "expected one of " + strings.Join(Formats(), ", ")}
	}
	if err != nil {
		return fmt.Errorf("write comparison: %w", err)
	}
	return nil
}

// Level is the confidence level of the ratio intervals, 1-Alpha.
func (r Result) Level() float64 { return 1 - r.Alpha }

// method describes how the figures were computed, in one sentence a reader can check.
func (r Result) method() string {
	return fmt.Sprintf("B/A is the ratio of the means in every row, paired or not; its %s interval is Welch's on the log scale "+
		"(the point 0 where B's mean is 0), and p the two-sided Mann-Whitney U test (exact permutation test for small tied samples); "+
		"where both sides were measured in the same rounds of one run (rows marked 'paired'), the interval is Fieller's and p the "+
		"paired t on the per-round differences, over the rounds that measured both (the values of rounds one side missed left out "+
		"and counted); loss rows give B - A in points with the t interval, paired or Welch's; "+
		"a verdict needs %s and an interval excluding 1, and is 'untestable' where no data could reach it at the samples; "+
		"'could detect' is the difference called 4 times in 5 at the row's level before adjustment; "+
		"warm-up and failed samples are left out.", pct(r.Level()), r.verdictTest())
}

// verdictTest states the test half of a verdict.
func (r Result) verdictTest() string {
	switch r.Adjust {
	case stats.AdjustBH:
		return fmt.Sprintf("p < %g after the Benjamini-Hochberg adjustment within %s (p adj, false discovery rate)", r.Alpha, Family)
	case stats.AdjustHolm:
		return fmt.Sprintf("p < %g after the Holm adjustment within %s (p adj, family-wise error rate)", r.Alpha, Family)
	}
	return fmt.Sprintf("p < %g, unadjusted for the number of rows,", r.Alpha)
}

// pColumn is cell when the output has an adjusted p column, which it lacks without an
// adjustment.
func (r Result) pColumn(cell string) string {
	if r.Adjust == stats.AdjustNone || r.Adjust == "" {
		return ""
	}
	return cell
}

// summaryLine is the one-line outcome, from B's point of view.
func (r Result) summaryLine() string {
	s := r.Summary
	line := fmt.Sprintf("%d better, %d worse, %d no significant difference", s.Better, s.Worse, s.NoDifference)
	if s.Untestable > 0 {
		line += fmt.Sprintf(", %d untestable at their samples (more rounds could tell)", s.Untestable)
	}
	if s.NA > 0 {
		line += fmt.Sprintf(", %d n/a", s.NA)
	}
	return line
}

// verdictText is a row's verdict as printed: an untestable one says at which sample sizes, a
// row without a difference what it could have detected, in per cent of A's mean or, for a
// figure compared in points (loss), in points.
func verdictText(r Row) string {
	switch {
	case r.Verdict == stats.VerdictUntestable:
		return fmt.Sprintf("untestable at %dv%d", r.NA, r.NB)
	case r.Verdict == stats.VerdictNone && r.MDE > 0 && !math.IsInf(r.MDE, 0) && r.Points:
		return fmt.Sprintf("%s (could detect >= %s pp)", r.Verdict, analysis.Pct(r.MDE))
	case r.Verdict == stats.VerdictNone && r.MDE > 0 && !math.IsInf(r.MDE, 0):
		return fmt.Sprintf("%s (could detect >= %s %%)", r.Verdict, analysis.Pct(r.MDE*100))
	}
	return r.Verdict
}

// leftOut is the number of a paired row's values that were not in a round both sides
// measured, and so not compared: each of its Blocks complete rounds holds one value a side.
func leftOut(r Row) int {
	if !r.Paired || r.Blocks <= 0 {
		return 0
	}
	return max(0, r.NA+r.NB-2*r.Blocks)
}

// rowP is a row's p-value as printed, marked where the row was compared round by round, with
// the values of the rounds one side missed, which the paired comparison left out.
func rowP(r Row) string {
	switch n := leftOut(r); {
	case !r.Paired:
		return pvalue(r.PValue)
	case n > 0:
		return fmt.Sprintf("%s paired, %d left out", pvalue(r.PValue), n)
	}
	return pvalue(r.PValue) + " paired"
}

func writeTable(w io.Writer, res Result) error {
	fmt.Fprintf(w, "A  %s  (run started %s, %s)\n", res.A.Label(), res.A.Started.UTC().Format("2006-01-02 15:04:05Z"), res.A.Status)
	fmt.Fprintf(w, "B  %s  (run started %s, %s)\n", res.B.Label(), res.B.Started.UTC().Format("2006-01-02 15:04:05Z"), res.B.Status)
	for _, d := range res.FingerprintDiff {
		fmt.Fprintf(w, "   %s: %s -> %s\n", d.Key, orDash(d.A), orDash(d.B))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "WORKLOAD\tPATH\tMETRIC\tN A\tN B\tMEAN A\tMEAN B\tB/A\t%s CI\tP\t%sVERDICT\n", pct(res.Level()),
		res.pColumn("P ADJ\t"))
	for _, r := range res.Rows {
		verdict := verdictText(r)
		if r.Note != "" {
			verdict += " (" + r.Note + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s%s\n", r.label(), r.Path, metricLabel(r),
			count(r.NA, r.FailedA), count(r.NB, r.FailedB), analysis.Num(r.MeanA), analysis.Num(r.MeanB), relColumn(r),
			ciColumn(r, ", "), rowP(r), res.pColumn(pvalue(r.PAdjusted)+"\t"), verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nB vs A: %s\n", res.summaryLine())
	writeUnmatched(w, res, func(s string) string { return s })
	_, err := fmt.Fprintln(w, res.method())
	return err
}

func writeUnmatched(w io.Writer, res Result, code func(string) string) {
	for _, u := range []struct {
		side  string
		cells []Cell
	}{{"A", res.OnlyA}, {"B", res.OnlyB}} {
		if len(u.cells) == 0 {
			continue
		}
		names := make([]string, len(u.cells))
		for i, c := range u.cells {
			names[i] = code(c.label() + " " + c.Path)
		}
		fmt.Fprintf(w, "Measured by %s only (not compared): %s\n", u.side, strings.Join(names, ", "))
	}
}

func writeMarkdown(w io.Writer, res Result) error {
	fmt.Fprintf(w, "### cnibench compare: %s vs %s\n\n", mdCode(res.B.Label()), mdCode(res.A.Label()))
	fmt.Fprintln(w, "| side | run | target | started | status |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, s := range []struct {
		name string
		r    Resolved
	}{{"A (baseline)", res.A}, {"B", res.B}} {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", s.name, mdCode(s.r.Run), mdCode(s.r.Target),
			s.r.Started.UTC().Format("2006-01-02 15:04:05Z"), mdtext.Escape(s.r.Status))
	}
	fmt.Fprintf(w, "\n**B vs A: %s.**\n\n", res.summaryLine())
	if len(res.FingerprintDiff) > 0 {
		fmt.Fprintln(w, "What differs between the targets:")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| fingerprint | A | B |")
		fmt.Fprintln(w, "|---|---|---|")
		for _, d := range res.FingerprintDiff {
			fmt.Fprintf(w, "| %s | %s | %s |\n", mdtext.Escape(d.Key), mdtext.Escape(orDash(d.A)), mdtext.Escape(orDash(d.B)))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "| workload | path | metric | n A | n B | mean A | mean B | B/A | %s CI | p | %sverdict |\n",
		pct(res.Level()), res.pColumn("p adj | "))
	fmt.Fprintf(w, "|---|---|---|--:|--:|--:|--:|--:|:-:|--:|%s---|\n", res.pColumn("--:|"))
	for _, r := range res.Rows {
		verdict := verdictText(r)
		switch r.Verdict {
		case stats.VerdictBetter, stats.VerdictWorse:
			verdict = "**" + verdict + "**"
		case VerdictNA:
			if r.Note != "" {
				verdict += " (" + r.Note + ")"
			}
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s%s |\n", mdtext.Escape(r.label()), mdtext.Escape(r.Path),
			mdtext.Escape(metricLabel(r)), count(r.NA, r.FailedA), count(r.NB, r.FailedB), analysis.Num(r.MeanA), analysis.Num(r.MeanB),
			relColumn(r), ciColumn(r, " – "), rowP(r),
			res.pColumn(pvalue(r.PAdjusted)+" | "), mdtext.Escape(verdict))
	}
	fmt.Fprintln(w)
	writeUnmatched(w, res, mdCode)
	_, err := fmt.Fprintf(w, "\n<sub>%s</sub>\n", mdtext.Escape(res.method()))
	return err
}

// jsonResult is the JSON layout; non-finite figures become null, which JSON can carry.
type jsonResult struct {
	A               Resolved     `json:"a"`
	B               Resolved     `json:"b"`
	Seed            int64        `json:"seed"`
	Resamples       int          `json:"resamples"`
	Alpha           float64      `json:"alpha"`
	Adjust          string       `json:"p_adjust"`
	Family          string       `json:"p_adjust_family"`
	Confidence      float64      `json:"confidence"`
	Summary         Summary      `json:"summary"`
	Rows            []jsonRow    `json:"rows"`
	OnlyA           []Cell       `json:"only_a"`
	OnlyB           []Cell       `json:"only_b"`
	FingerprintDiff []Difference `json:"fingerprint_diff"`
	// Pool is a pooled comparison's baseline runs; Gate the gate's judgement where one was
	// asked for (Result.Gate).
	Pool []string  `json:"pool,omitempty"`
	Gate *gateJSON `json:"gate,omitempty"`
}

type jsonRow struct {
	Workload  string   `json:"workload"`
	Pairs     int      `json:"pairs"`
	Path      string   `json:"path"`
	Metric    string   `json:"metric"`
	Unit      string   `json:"unit"`
	Direction string   `json:"direction"` // "higher", "lower" or "" when unknown
	NA        int      `json:"n_a"`
	NB        int      `json:"n_b"`
	FailedA   int      `json:"failed_a"`
	FailedB   int      `json:"failed_b"`
	MeanA     *float64 `json:"mean_a"`
	MeanB     *float64 `json:"mean_b"`
	Ratio     *float64 `json:"ratio"`
	RatioLow  *float64 `json:"ratio_low"`
	RatioHigh *float64 `json:"ratio_high"`
	PValue    *float64 `json:"p_value"`
	PAdjusted *float64 `json:"p_adjusted"`
	U         *float64 `json:"u"`
	Exact     bool     `json:"exact"`
	// Paired says the row was compared round by round (both sides in the same run's rounds);
	// LeftOut counts the values of the rounds one side missed, which it did not compare.
	Paired  bool `json:"paired"`
	LeftOut int  `json:"left_out,omitempty"`
	// MDE is the smallest relative difference of the means the row could detect four times in
	// five at its level before adjustment (0.04: 4 %), null when not computed or untestable;
	// on the difference scale it is in the metric's unit.
	MDE *float64 `json:"min_detectable_effect"`
	// Scale is "difference" for a metric compared as B - A (UDP loss), with Difference and
	// its interval in the metric's unit; empty for a ratio.
	Scale          string   `json:"scale,omitempty"`
	Difference     *float64 `json:"difference,omitempty"`
	DifferenceLow  *float64 `json:"difference_low,omitempty"`
	DifferenceHigh *float64 `json:"difference_high,omitempty"`
	Verdict        string   `json:"verdict"`
	Note           string   `json:"note,omitempty"`
}

func writeJSON(w io.Writer, res Result) error {
	doc := jsonResult{A: res.A, B: res.B, Seed: res.Seed, Resamples: res.Resamples, Alpha: res.Alpha,
		Adjust: res.Adjust, Family: Family, Confidence: res.Level(), Summary: res.Summary, Rows: []jsonRow{}, OnlyA: orEmpty(res.OnlyA),
		OnlyB: orEmpty(res.OnlyB), FingerprintDiff: res.FingerprintDiff, Pool: res.Pool}
	if res.Gate != nil {
		g := newGateJSON(*res.Gate)
		doc.Gate = &g
	}
	if doc.FingerprintDiff == nil {
		doc.FingerprintDiff = []Difference{}
	}
	for _, r := range res.Rows {
		row := jsonRow{Workload: r.Workload, Pairs: r.Pairs, Path: r.Path, Metric: r.Metric, Unit: r.Unit,
			Direction: r.Direction, NA: r.NA, NB: r.NB, FailedA: r.FailedA, FailedB: r.FailedB,
			MeanA: finite(r.MeanA), MeanB: finite(r.MeanB), Ratio: finite(r.Ratio), RatioLow: finite(r.RatioLow),
			RatioHigh: finite(r.RatioHigh), PValue: finite(r.PValue), PAdjusted: finite(r.PAdjusted), U: finite(r.U), Exact: r.Exact, Paired: r.Paired,
			MDE: finite(r.MDE), Verdict: r.Verdict, Note: r.Note, LeftOut: leftOut(r)}
		if r.Points {
			row.Scale, row.Difference, row.DifferenceLow, row.DifferenceHigh = "difference", finite(r.Diff), finite(r.DiffLow), finite(r.DiffHigh)
		}
		doc.Rows = append(doc.Rows, row)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

func orEmpty(c []Cell) []Cell {
	if c == nil {
		return []Cell{}
	}
	return c
}

func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

func metricLabel(r Row) string {
	if r.Unit == "" {
		return r.Metric
	}
	return r.Metric + " [" + r.Unit + "]"
}

// count is n, with the failed samples beside it when there are any.
func count(n, failed int) string {
	if failed == 0 {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("%d (+%d failed)", n, failed)
}

// ratio shows three decimals: a 0.1 % difference is the finest any of these measurements
// resolves.
// relColumn is a row's B/A column: the ratio of the means, or for a metric compared on the
// difference scale B - A in percentage points.
func relColumn(r Row) string {
	if r.Points {
		if math.IsNaN(r.Diff) {
			return "-"
		}
		return fmt.Sprintf("%+.3g pp", r.Diff)
	}
	return ratio(r.Ratio)
}

// ciColumn is the interval of relColumn's figure.
func ciColumn(r Row, sep string) string {
	if r.Points {
		if math.IsNaN(r.DiffLow) || math.IsNaN(r.DiffHigh) {
			return "-"
		}
		return fmt.Sprintf("[%.3g%s%.3g] pp", r.DiffLow, sep, r.DiffHigh)
	}
	return interval(r.RatioLow, r.RatioHigh, sep)
}

func ratio(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	return fmt.Sprintf("%.3f", v)
}

func interval(lo, hi float64, sep string) string {
	if math.IsNaN(lo) || math.IsNaN(hi) {
		return "-"
	}
	return "[" + ratio(lo) + sep + ratio(hi) + "]"
}

func pvalue(p float64) string {
	switch {
	case math.IsNaN(p):
		return "-"
	case p < 1e-4:
		return "<0.0001"
	}
	return fmt.Sprintf("%.2g", p)
}

func pct(level float64) string { return fmt.Sprintf("%g%%", math.Round(level*1000)/10) }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// mdCode renders s as inline code, falling back to escaped text when s contains a backtick
// or a pipe, which a code span cannot hold inside a table.
func mdCode(s string) string {
	if strings.ContainsAny(s, "`|\n") {
		return mdtext.Escape(s)
	}
	return "`" + s + "`"
}
