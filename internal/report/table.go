package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/cnibench/cnibench/internal/analysis"
	"github.com/cnibench/cnibench/internal/export"
	"github.com/cnibench/cnibench/internal/history"
	"github.com/cnibench/cnibench/internal/label"
	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/setting"
	"github.com/cnibench/cnibench/internal/stats"
	"github.com/cnibench/cnibench/internal/suite"
	"sigs.k8s.io/yaml"
)

// Document is the machine-readable form of a run's results.
type Document struct {
	Run     record.Run      `json:"run"`
	Targets []record.Target `json:"targets"`
	Rows    []analysis.Row  `json:"rows"`
	// Ranking orders the targets on each headline metric (runs with several targets).
	Ranking []analysis.RankGroup `json:"ranking,omitempty"`
	// Verdict is each workload's headline answer (Verdict).
	Verdict []analysis.VerdictLine `json:"verdict,omitempty"`
	// Reference sets the figures of the study the suite reproduces beside the run's.
	Reference *analysis.ReferenceTable `json:"reference,omitempty"`
	// Profiles is where the CPU time went in each profiled cell (runs with profile on).
	Profiles []analysis.ProfileCell `json:"profiles,omitempty"`
	// History is the run's cells over the stored runs up to it, with their change points,
	// where the caller read the store for it (history.ForRun).
	History []history.Series `json:"history,omitempty"`
	// Rounds is each cell's verdict metric sample by sample, which the HTML report plots.
	Rounds []analysis.CellRounds `json:"rounds,omitempty"`
}

// NewDocument summarises a run's samples into the document every output renders.
func NewDocument(run record.Run, targets []record.Target, samples []record.Sample) Document {
	names := make([]string, len(targets))
	for i, t := range targets {
		names[i] = t.Name
	}
	d := Document{Run: run, Targets: targets, Rows: analysis.Summarize(samples), Ranking: analysis.Rank(samples), Verdict: analysis.Verdict(samples),
		Reference: referenceOf(run, samples), Profiles: analysis.Profiles(names, samples), Rounds: analysis.Rounds(samples)}
	m := marginOf(run)
	for i := range d.Verdict {
		d.Verdict[i].Margin = m
	}
	for i := range d.Ranking {
		d.Ranking[i].Margin = m
	}
	return d
}

// marginOf is the equivalence margin of a run with a precision target, from its stored
// suite; 0 for a run without one (or a suite that no longer parses).
func marginOf(run record.Run) float64 {
	s, err := suite.Parse([]byte(run.Suite))
	if err != nil || s.Precision <= 0 {
		return 0
	}
	return float64(s.Margin)
}

// Write renders a run in format "table", "json" or "yaml".
func Write(w io.Writer, format string, d Document) error {
	switch format {
	case "table":
		return Table(w, d)
	case "brief":
		return Brief(w, d)
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(jsonSafe(d))
	case "yaml":
		out, err := yaml.Marshal(jsonSafe(d))
		if err != nil {
			return fmt.Errorf("render yaml: %w", err)
		}
		_, err = w.Write(out)
		return err
	}
	return &setting.Error{Name: "output", Value: fmt.Sprintf("%q", format), Want: "expected table, json or yaml"}
}

// jsonSafe replaces NaN and infinities, which JSON cannot carry, with zero-valued omissions;
// the run and its targets take the export's snake_case form, as every key of the document.
func jsonSafe(d Document) any {
	head := map[string]any{"run": export.NewRunJSON(d.Run), "targets": export.NewTargetsJSON(d.Targets)}
	rows := make([]map[string]any, 0, len(d.Rows))
	for _, r := range d.Rows {
		s := r.Summary
		row := map[string]any{"target": r.Target, "path": r.Path, "workload": r.Workload, "pairs": r.Cell().Pairs, "metric": r.Metric, "unit": r.Unit,
			"n": s.N, "failed": r.Failed, "flagged": r.Flagged, "outliers": len(s.Outliers), "bimodal": s.Bimodal}
		if s.Interval != "" {
			row["interval"] = s.Interval
		}
		for k, v := range map[string]float64{"mean": s.Mean, "median": s.Median, "stddev": s.StdDev, "min": s.Min, "max": s.Max,
			"ci95_low": s.CILow, "ci95_high": s.CIHigh, "trimmed_mean": s.TrimmedMean, "of_baseline": r.OfBaseline} {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				row[k] = v
			}
		}
		rows = append(rows, row)
	}
	head["rows"] = rows
	if len(d.Ranking) > 0 {
		head["ranking"] = rankingJSON(d.Ranking)
	}
	if len(d.Verdict) > 0 {
		head["verdict"] = verdictJSON(d.Verdict)
	}
	if d.Reference != nil {
		head["reference"] = referenceJSON(d.Reference)
	}
	if len(d.Profiles) > 0 {
		head["profiles"] = profilesJSON(d.Profiles)
	}
	return head
}

// header prints the run's line and each target's environment.
func header(w io.Writer, d Document) {
	fmt.Fprintf(w, "\nrun %s  %s  %s  seed %d", d.Run.ID, d.Run.Status, d.Run.Started.Format("2006-01-02 15:04:05Z"), d.Run.Seed)
	if len(d.Run.Labels) > 0 {
		fmt.Fprintf(w, "  labels %s", label.Set(d.Run.Labels))
	}
	fmt.Fprintln(w)
	for _, t := range d.Targets {
		fmt.Fprintf(w, "target %s: %s\n", t.Name, fingerprintLine(t.Fingerprint))
	}
}

// Table prints the fingerprint of each target, the headline rows, the ranking and the
// verdict.
func Table(w io.Writer, d Document) error {
	header(w, d)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "TARGET\tWORKLOAD\tPATH\tMETRIC\tN\tMEDIAN\tMEAN\t95% CI\tTRIM20\tOUTL\txHOST\t")
	for _, r := range d.Rows {
		if !analysis.Headline(r) {
			continue
		}
		s := r.Summary
		n := fmt.Sprint(s.N)
		if r.Failed > 0 {
			n += fmt.Sprintf("(+%d failed)", r.Failed)
		}
		if r.Flagged > 0 {
			n += fmt.Sprintf("(%d flagged)", r.Flagged)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.Target, r.Label(), r.Path, r.Metric+" ["+r.Unit+"]", n,
			analysis.Num(s.Median), analysis.Num(s.Mean), ciOf(s), analysis.Num(s.TrimmedMean), outliers(s), frac(r.OfBaseline))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if l := IntervalLegend(d.Rows); l != "" {
		fmt.Fprintln(w, l)
	}
	WriteRanking(w, d.Ranking)
	WriteVerdict(w, d.Verdict)
	writeReference(w, d.Reference, d.Targets)
	writeProfiles(w, d.Profiles, true)
	return nil
}

// fingerprintLine shows the keys a reader compares first.
func fingerprintLine(fp map[string]string) string {
	var parts []string
	for _, k := range []string{"cluster", "kubernetes_version", "cni", "kube_proxy_mode", "runtime_handler", "node_a_runtime", "node_a_kernel", "pod_mtu", "host_mtu"} {
		if v := fp[k]; v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	return strings.Join(parts, " ") + fmt.Sprintf(" (+%d more keys in -o json)", len(fp)-len(parts))
}

// ciOf is a summary's interval with the mark of its method when that is not the t-interval.
func ciOf(s stats.Summary) string {
	return ci(s.CILow, s.CIHigh) + intervalMark(s.Interval)
}

func intervalMark(method string) string {
	if method == stats.IntervalClipped {
		return " c"
	}
	return ""
}

// outliers is the outlier count, with the word "bimodal" for a cell of two groups.
func outliers(s stats.Summary) string {
	if s.Bimodal {
		return fmt.Sprintf("%d bimodal", len(s.Outliers))
	}
	return fmt.Sprint(len(s.Outliers))
}

// IntervalLegend explains the marks of the intervals in rows, empty when none is marked.
func IntervalLegend(rows []analysis.Row) string {
	var clipped, bi bool
	for _, r := range rows {
		clipped = clipped || r.Summary.Interval == stats.IntervalClipped
		bi = bi || r.Summary.Bimodal
	}
	var parts []string
	if clipped {
		parts = append(parts, "c: t-interval clipped to the metric's range (the true mean lies in it)")
	}
	if bi {
		parts = append(parts, "bimodal: the samples form two separate groups; the mean describes neither")
	}
	if len(parts) == 0 {
		return ""
	}
	return "95 % CI is Student's t unless marked; " + strings.Join(parts, "; ")
}

func ci(lo, hi float64) string {
	if math.IsNaN(lo) || math.IsNaN(hi) {
		return "-"
	}
	return "[" + analysis.Num(lo) + ", " + analysis.Num(hi) + "]"
}

func frac(v float64) string {
	if math.IsNaN(v) {
		return ""
	}
	return fmt.Sprintf("%.2f", v)
}

// verdictJSON drops the NaN figures JSON cannot carry.
func verdictJSON(lines []analysis.VerdictLine) []map[string]any {
	out := make([]map[string]any, 0, len(lines))
	for _, l := range lines {
		g := rankingJSON([]analysis.RankGroup{{Path: l.Path, Workload: l.Workload, Pairs: l.Pairs, Metric: l.Metric, Unit: l.Unit,
			HigherIsBetter: l.HigherIsBetter, Entries: l.Entries, Margin: l.Margin}})[0]
		g["against"] = l.Against
		out = append(out, g)
	}
	return out
}

// rankingJSON drops the NaN figures JSON cannot carry.
func rankingJSON(groups []analysis.RankGroup) []map[string]any {
	out := make([]map[string]any, 0, len(groups))
	for _, g := range groups {
		var entries []map[string]any
		for _, e := range g.Entries {
			m := map[string]any{"target": e.Target, "verdict": e.Verdict, "n": e.Summary.N, "paired": e.Paired}
			if e.Dropped > 0 {
				m["dropped_rounds"] = e.Dropped
			}
			if g.Margin > 0 && e.Verdict == analysis.NotSignificant {
				m["equivalent"], m["equivalence_margin"] = analysis.Equivalent(e, g.Margin), analysis.MarginText(e, g.Margin)
			}
			figures := map[string]float64{"mean": e.Mean, "ratio_to_best": e.RatioToBest, "p_value": e.PValue,
				"ci95_low": e.Summary.CILow, "ci95_high": e.Summary.CIHigh, "min_detectable_effect": e.MDE}
			if e.Points {
				// On the difference scale: in the metric's unit, as is the detectable effect.
				m["scale"] = "difference"
				figures["difference"], figures["difference_ci95_low"], figures["difference_ci95_high"] = e.Diff, e.DiffLow, e.DiffHigh
			}
			for k, v := range figures {
				if !math.IsNaN(v) && !math.IsInf(v, 0) {
					m[k] = v
				}
			}
			entries = append(entries, m)
		}
		out = append(out, map[string]any{"path": g.Path, "workload": g.Workload, "pairs": max(g.Pairs, 1), "metric": g.Metric, "unit": g.Unit,
			"higher_is_better": g.HigherIsBetter, "entries": entries})
	}
	return out
}
