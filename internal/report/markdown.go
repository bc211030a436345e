package report

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/cnibench/cnibench/internal/analysis"
	"github.com/cnibench/cnibench/internal/catalog"
	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/mdtext"
	"github.com/cnibench/cnibench/internal/suite"
)

// This file holds the view of one or more runs that the HTML and Markdown reports share
// (targets labelled, workloads ordered, rows formatted), and the Markdown writer.

// reportTarget is one target of one run, as the report labels it.
type reportTarget struct {
	doc         int // index of its Document
	name        string
	label       string // the name, or RUN/TARGET when several runs are in the report
	fingerprint map[string]string
}

// reportRow is a Row with the index of its target in model.targets.
type reportRow struct {
	analysis.Row
	target int
}

// section is what the report shows for one workload.
type section struct {
	workload string
	rows     []reportRow // every row of the workload: by metric, target, then path
}

// model is what both reports show, in display order.
type model struct {
	docs     []Document
	targets  []reportTarget
	paths    []string // every path with results, in suite order
	sections []section
}

// percentileMetrics are the latency figures the percentile chart shows together.
func percentileMetrics() []string {
	return []string{engine.MetricLatencyP50, engine.MetricLatencyP90, engine.MetricLatencyP99}
}

// buildModel orders and labels the content of docs. Targets of different runs stay apart
// even when they have the same name, because figures of two runs are never pooled.
func buildModel(docs []Document) (model, error) {
	if len(docs) == 0 {
		return model{}, errors.New("report: no runs to report")
	}
	m := model{docs: docs}
	index := map[[2]string]int{} // (doc, target name) -> index into m.targets
	addTarget := func(doc int, name string, fp map[string]string) int {
		k := [2]string{fmt.Sprint(doc), name}
		if i, ok := index[k]; ok {
			return i
		}
		label := name
		if len(docs) > 1 {
			label = docs[doc].Run.ID + "/" + name
		}
		index[k] = len(m.targets)
		m.targets = append(m.targets, reportTarget{doc: doc, name: name, label: label, fingerprint: fp})
		return index[k]
	}
	byWorkload := map[string][]reportRow{}
	pathSeen := map[string]bool{}
	for i, d := range docs {
		for _, t := range d.Targets {
			addTarget(i, t.Name, t.Fingerprint)
		}
		// Rows of a target the run did not record (an older store) still get a column.
		for _, r := range d.Rows {
			t := addTarget(i, r.Target, nil)
			byWorkload[r.Label()] = append(byWorkload[r.Label()], reportRow{Row: r, target: t})
			pathSeen[r.Path] = true
		}
	}
	for p := range pathSeen {
		m.paths = append(m.paths, p)
	}
	sort.Slice(m.paths, func(i, j int) bool { return pathLess(m.paths[i], m.paths[j]) })
	for w, rows := range byWorkload {
		sort.SliceStable(rows, func(i, j int) bool {
			// Metric first, as in the charts: the figures a reader compares sit together.
			a, b := rows[i], rows[j]
			if ra, rb := analysis.MetricRank(w, a.Metric), analysis.MetricRank(w, b.Metric); ra != rb {
				return ra < rb
			}
			if a.Metric != b.Metric {
				return a.Metric < b.Metric
			}
			if a.target != b.target {
				return a.target < b.target
			}
			return pathLess(a.Path, b.Path)
		})
		m.sections = append(m.sections, section{workload: w, rows: rows})
	}
	sort.Slice(m.sections, func(i, j int) bool { return workloadLess(m.sections[i].workload, m.sections[j].workload) })
	return m, nil
}

// pathLess orders paths as the suite lists them, unknown ones after, by name.
func pathLess(a, b string) bool {
	if ra, rb := analysis.PathRank(a), analysis.PathRank(b); ra != rb {
		return ra < rb
	}
	return a < b
}

// workloadLess orders workloads by kind (engine.Kinds' display order) and then by their
// parameters, comparing digit runs as numbers so that tcp-stream/4 comes before tcp-stream/16.
func workloadLess(a, b string) bool {
	rank := func(w string) int { return engine.KindRank(analysis.WorkloadKind(w)) }
	if ra, rb := rank(a), rank(b); ra != rb {
		return ra < rb
	}
	for a != "" && b != "" {
		da, db := leadingDigits(a), leadingDigits(b)
		if da != "" && db != "" {
			if len(da) != len(db) {
				return len(da) < len(db)
			}
			if da != db {
				return da < db
			}
			a, b = a[len(da):], b[len(db):]
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
}

// leadingDigits returns the run of ASCII digits s starts with.
func leadingDigits(s string) string {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i]
}

// headlineMetrics lists the metrics of a section that the report charts, in display order.
func (s section) headlineMetrics() []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range s.rows {
		if analysis.Headline(r.Row) && !seen[r.Metric] {
			seen[r.Metric] = true
			out = append(out, r.Metric)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		return analysis.MetricRank(s.workload, out[i]) < analysis.MetricRank(s.workload, out[j])
	})
	return out
}

// directions splits metric names by which way is better; metrics of unknown direction are
// left out.
func directions(metrics []string) (higher, lower []string) {
	for _, name := range metrics {
		spec, ok := catalog.Lookup(name)
		switch {
		case !ok:
		case spec.HigherIsBetter:
			higher = append(higher, name)
		default:
			lower = append(lower, name)
		}
	}
	return higher, lower
}

// arrow marks a metric's better direction: ↑ higher is better, ↓ lower is better.
func arrow(metric string) string {
	spec, ok := catalog.Lookup(metric)
	switch {
	case !ok:
		return ""
	case spec.HigherIsBetter:
		return "↑"
	}
	return "↓"
}

// rowHeader names the columns of rowCells.
func rowHeader() []string {
	return []string{"Target", "Path", "Metric", "Unit", "n", "Median", "Mean", "95 % CI", "Trimmed mean", "Outliers", "×host"}
}

// rowCells formats a row for the tables of both reports.
func (m model) rowCells(r reportRow) []string {
	s := r.Summary
	n := fmt.Sprint(s.N)
	if r.Failed > 0 {
		n += fmt.Sprintf(" (+%d failed)", r.Failed)
	}
	return []string{m.targets[r.target].label, r.Path, strings.TrimSpace(r.Metric + " " + arrow(r.Metric)), r.Unit, n,
		analysis.Num(s.Median), analysis.Num(s.Mean), ciOf(s), analysis.Num(s.TrimmedMean), outliers(s), ofHost(r.Row)}
}

// ofHost prints a pod figure as a fraction of the host-network baseline.
func ofHost(r analysis.Row) string {
	switch {
	case r.Path == suite.HostNetwork:
		return "baseline"
	case math.IsNaN(r.OfBaseline) || math.IsInf(r.OfBaseline, 0):
		return ""
	}
	return frac(r.OfBaseline) + "×"
}

// envKeys lists every fingerprint key of the report: the ones readers compare first, then
// the rest by name.
func (m model) envKeys() []string {
	first := []string{"cluster", "kubernetes_version", "cni", "kube_proxy_mode", "runtime_handler", "node_a_runtime", "node_a_kernel", "pod_mtu", "host_mtu"}
	all := map[string]bool{}
	for _, t := range m.targets {
		for k := range t.fingerprint {
			all[k] = true
		}
	}
	var keys, rest []string
	for _, k := range first {
		if all[k] {
			keys = append(keys, k)
			delete(all, k)
		}
	}
	for k := range all {
		rest = append(rest, k)
	}
	sort.Strings(rest)
	return append(keys, rest...)
}

// envDiffers tells whether the targets disagree on a fingerprint key.
func (m model) envDiffers(key string) bool {
	for _, t := range m.targets[1:] {
		if t.fingerprint[key] != m.targets[0].fingerprint[key] {
			return true
		}
	}
	return false
}

// runDates formats the start, end and length of a run.
func runDates(d Document) (started, finished, took string) {
	const layout = "2006-01-02 15:04:05Z"
	started = d.Run.Started.UTC().Format(layout)
	if d.Run.Finished.IsZero() {
		return started, "-", "-"
	}
	return started, d.Run.Finished.UTC().Format(layout), d.Run.Finished.Sub(d.Run.Started).Round(1e9).String()
}

// WriteMarkdown renders docs (one or more runs) as GitHub-flavoured Markdown for pasting
// into a review: the runs, the environment of each target, and per workload the direction
// of each metric and a table of every headline figure (n, median, mean, 95 % CI, trimmed
// mean, outliers, fraction of the host-network baseline), the other metrics folded away.
// It shows the same figures as WriteHTML, without charts.
func WriteMarkdown(w io.Writer, docs []Document) error {
	m, err := buildModel(docs)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = d.Run.ID
	}
	fmt.Fprintf(bw, "# cnibench report: %s\n\n", mdtext.Escape(strings.Join(ids, ", ")))
	mdTable(bw, []string{"Run", "Status", "Started", "Finished", "Took", "Seed", "Version", "Note"}, func(add func(...string)) {
		for _, d := range docs {
			started, finished, took := runDates(d)
			add(d.Run.ID, d.Run.Status, started, finished, took, fmt.Sprint(d.Run.Seed), d.Run.Version, d.Run.Note)
		}
	})
	for _, d := range docs {
		if d.Run.Suite == "" {
			continue
		}
		// A fence longer than any backtick run in the YAML cannot be closed by it.
		fence := strings.Repeat("`", max(3, longestRun(d.Run.Suite, '`')+1))
		fmt.Fprintf(bw, "<details><summary>Suite of run %s</summary>\n\n%syaml\n%s\n%s\n\n</details>\n\n",
			mdtext.Escape(d.Run.ID), fence, strings.TrimRight(d.Run.Suite, "\n"), fence)
	}
	fmt.Fprint(bw, "Figures are means over the measured samples (warm-up excluded); the 95 % CI is the t-interval of the mean, marked c where it is clipped to the metric's range; bimodal marks a cell whose samples form two separate groups; ×host is the mean as a fraction of the host-network path of the same target; ↑ higher is better, ↓ lower is better.\n\n")

	for _, d := range docs {
		writeReferenceMarkdown(bw, d.Reference, d.Targets)
		writeProfilesMarkdown(bw, d.Profiles)
	}
	fmt.Fprint(bw, "## Environment\n\n")
	head := []string{"Key"}
	for _, t := range m.targets {
		head = append(head, t.label)
	}
	mdTable(bw, head, func(add func(...string)) {
		for _, k := range m.envKeys() {
			cells := []string{k}
			if len(m.targets) > 1 && m.envDiffers(k) {
				cells[0] = "**" + k + "**" // bold: the targets differ here
			}
			for _, t := range m.targets {
				cells = append(cells, t.fingerprint[k])
			}
			add(cells...)
		}
	})
	if len(m.targets) > 1 {
		fmt.Fprint(bw, "Keys in bold differ between targets.\n\n")
	}

	for _, s := range m.sections {
		fmt.Fprintf(bw, "## %s\n\n", mdtext.Escape(s.workload))
		higher, lower := directions(s.headlineMetrics())
		if len(higher) > 0 {
			fmt.Fprintf(bw, "Higher is better (↑): %s.  \n", mdtext.Escape(strings.Join(higher, ", ")))
		}
		if len(lower) > 0 {
			fmt.Fprintf(bw, "Lower is better (↓): %s.\n", mdtext.Escape(strings.Join(lower, ", ")))
		}
		fmt.Fprintln(bw)
		m.mdRows(bw, s, true)
		var other bool
		for _, r := range s.rows {
			other = other || !analysis.Headline(r.Row)
		}
		if other {
			fmt.Fprint(bw, "<details><summary>Other metrics</summary>\n\n")
			m.mdRows(bw, s, false)
			fmt.Fprint(bw, "</details>\n\n")
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write markdown report: %w", err)
	}
	return nil
}

// mdRows writes the headline rows of a section, or the others.
func (m model) mdRows(w io.Writer, s section, headline bool) {
	mdTable(w, rowHeader(), func(add func(...string)) {
		for _, r := range s.rows {
			if analysis.Headline(r.Row) == headline {
				add(m.rowCells(r)...)
			}
		}
	})
}

// mdTable writes a Markdown table whose rows fill calls add with; cells are escaped, and
// numeric-looking columns are not right-aligned on purpose: GitHub would then align the
// header too, which reads worse for text-heavy tables.
func mdTable(w io.Writer, head []string, fill func(add func(...string))) {
	line := func(cells []string) {
		esc := make([]string, len(cells))
		for i, c := range cells {
			esc[i] = mdtext.Escape(c)
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(esc, " | "))
	}
	line(head)
	sep := make([]string, len(head))
	for i := range sep {
		sep[i] = "---"
	}
	fmt.Fprintf(w, "|%s|\n", strings.Join(sep, "|"))
	fill(func(cells ...string) {
		for len(cells) < len(head) {
			cells = append(cells, "")
		}
		line(cells[:len(head)])
	})
	fmt.Fprintln(w)
}

// longestRun is the length of the longest run of c in s.
func longestRun(s string, c byte) int {
	best, cur := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			cur++
			best = max(best, cur)
		} else {
			cur = 0
		}
	}
	return best
}
