package report

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/cnibench/cnibench/internal/analysis"
	"github.com/cnibench/cnibench/internal/mdtext"
	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/suite"
)

// referenceOf sets the study a run's suite reproduces beside its samples; nil for a suite
// without one (or a stored suite that no longer parses).
func referenceOf(run record.Run, samples []record.Sample) *analysis.ReferenceTable {
	s, err := suite.Parse([]byte(run.Suite))
	if err != nil || s.Reference == nil {
		return nil
	}
	return analysis.References(s.Reference, samples)
}

// referenceCells are a row's cells: the figure, the study's value, the run's with its
// interval, their ratio and the direction.
func referenceCells(r analysis.ReferenceRow) []string {
	workload := record.Cell{Workload: r.Workload, Pairs: r.Pairs}.WorkloadLabel()
	figure := fmt.Sprintf("%s %s %s %s", r.Target, r.Path, workload, r.Metric)
	study := analysis.Num(r.Value) + " " + r.Unit
	if r.Against != "" {
		figure = fmt.Sprintf("%s/%s %s %s %s", r.Target, r.Against, r.Path, workload, r.Metric)
		study = "x" + analysis.Num(r.Value)
	}
	if r.PerPair {
		figure += " per pair"
	}
	ours, ratio := "not measured", "-"
	if r.Measured {
		ours = fmt.Sprintf("%s [%s, %s] n=%d", analysis.Num(r.Ours), analysis.Num(r.Low), analysis.Num(r.High), r.N)
		if r.Against != "" {
			ours = "x" + ours
		}
	}
	if !math.IsNaN(r.Ratio) {
		ratio = "x" + analysis.Num(r.Ratio)
	}
	direction := r.Direction
	switch {
	case direction == "":
		direction = "-"
	case r.Decided:
		direction += " (significant)"
	default:
		direction += " (n.s.)"
	}
	return []string{figure, study, ours, ratio, direction}
}

// referenceHeader names the columns of referenceCells.
func referenceHeader() []string {
	return []string{"figure", "study", "this run [95 % CI]", "run/study", "direction"}
}

// setupLine says what this run ran on, for the reader weighing it against the study's setup.
func setupLine(targets []record.Target) string {
	var parts []string
	for _, t := range targets {
		fp := t.Fingerprint
		var facts []string
		for _, k := range []string{"cni", "kube_proxy_mode", "cri", "oci_runtime", "node_a_cpus", "pod_mtu", "kubernetes_version"} {
			if v := fp[k]; v != "" {
				facts = append(facts, strings.TrimPrefix(strings.TrimPrefix(k, "node_a_"), "kube_")+"="+v)
			}
		}
		if len(facts) == 0 {
			facts = []string{"no fingerprint"}
		}
		parts = append(parts, t.Name+": "+strings.Join(facts, " "))
	}
	return strings.Join(parts, "; ")
}

// writeReference prints the study's figures beside the run's, after the verdict.
func writeReference(w io.Writer, t *analysis.ReferenceTable, targets []record.Target) {
	if t == nil {
		return
	}
	fmt.Fprintf(w, "\nbeside the study: %s\nthis run: %s\n", t.Study, setupLine(targets))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "  %s\n", strings.Join(referenceHeader(), "\t"))
	for _, r := range t.Rows {
		fmt.Fprintf(tw, "  %s\n", strings.Join(referenceCells(r), "\t"))
	}
	_ = tw.Flush()
}

// writeReferenceMarkdown is writeReference as a Markdown section.
func writeReferenceMarkdown(w io.Writer, t *analysis.ReferenceTable, targets []record.Target) {
	if t == nil {
		return
	}
	fmt.Fprintf(w, "## Beside the study\n\n%s  \nThis run: %s\n\n", mdtext.Escape(t.Study), mdtext.Escape(setupLine(targets)))
	mdTable(w, referenceHeader(), func(add func(...string)) {
		for _, r := range t.Rows {
			add(referenceCells(r)...)
		}
	})
}

// referenceJSON drops the NaN figures JSON cannot carry.
func referenceJSON(t *analysis.ReferenceTable) map[string]any {
	rows := make([]map[string]any, 0, len(t.Rows))
	for _, r := range t.Rows {
		m := map[string]any{"target": r.Target, "path": r.Path, "workload": r.Workload, "metric": r.Metric, "unit": r.Unit,
			"study": r.Value, "measured": r.Measured, "n": r.N}
		if r.Against != "" {
			m["against"] = r.Against
		}
		if r.Pairs > 1 {
			m["pairs"] = r.Pairs
		}
		if r.PerPair {
			m["per_pair"] = true
		}
		if r.Direction != "" {
			m["direction"], m["decided"] = r.Direction, r.Decided
		}
		for k, v := range map[string]float64{"ours": r.Ours, "ci95_low": r.Low, "ci95_high": r.High, "ratio": r.Ratio} {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				m[k] = v
			}
		}
		rows = append(rows, m)
	}
	return map[string]any{"study": t.Study, "rows": rows}
}

// htmlRef is one run's study beside it, for the HTML report (the template escapes it).
type htmlRef struct {
	Study, Setup string
	Head         []string
	Rows         [][]string
}

func htmlReference(t *analysis.ReferenceTable, targets []record.Target) htmlRef {
	h := htmlRef{Study: t.Study, Setup: setupLine(targets), Head: referenceHeader()}
	for _, r := range t.Rows {
		h.Rows = append(h.Rows, referenceCells(r))
	}
	return h
}
