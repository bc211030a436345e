package report

import (
	"fmt"
	"html/template"
	"io"
	"strings"

	"github.com/cnibench/cnibench/internal/analysis"
	"github.com/cnibench/cnibench/internal/catalog"
	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/label"
)

// htmlPage is the data of pageTemplate.
type htmlPage struct {
	Title string
	// Nav links the page to the pages of a server around it (HTMLOptions); empty in a file.
	Nav []Link
	// Verdict is what `cnibench run` ends with, per run: a table per workload.
	Verdict []htmlVerdict
	// Forests plot the verdict's comparisons, per run.
	Forests []htmlChart
	// References set each run's study beside it.
	References []htmlRef
	// Profiles are the flame graphs of profiled cells.
	Profiles []htmlProfile
	// History charts each cell of a run over the stored runs, change points marked.
	History  []htmlHistory
	Runs     []htmlRun
	EnvHead  []string
	Env      []htmlEnvRow
	Sections []htmlSection
	Head     []string
}

// htmlRun is a run in the page header.
type htmlRun struct {
	ID, Status, Started, Finished, Took, Version, Note, Suite, Targets, Labels string
	Seed                                                                       int64
}

// htmlEnvRow is one fingerprint key and its value on each target.
type htmlEnvRow struct {
	Key     string
	Values  []string
	Differs bool
}

// htmlSection is one workload.
type htmlSection struct {
	Anchor, Workload string
	Higher, Lower    []string
	Charts           []htmlChart
	// Rounds plot each cell's samples round by round and their spread.
	Rounds      []htmlChart
	Rows, Other []htmlTableRow
	// Concurrency is shown right before the section: the charts against the pair count of a
	// workload run at several, on the first of its sections. Nil on the others.
	Concurrency *htmlConcurrency
}

// htmlTableRow is a row of a figures table; First marks the first row of a metric, which
// gets a heavier rule above it.
type htmlTableRow struct {
	Cells []string
	First bool
}

// htmlChart is an SVG chart and its caption.
type htmlChart struct {
	Title, Better, Description string
	SVG                        template.HTML
	// Links lead from the chart to the samples behind it (HTMLOptions.Samples); none in a file.
	Links []Link
}

// WriteHTML renders docs (one or more runs) as one self-contained HTML page that makes no
// request of any kind when opened (inline CSS, charts as inline SVG, and a
// Content-Security-Policy that forbids fetching anything). It shows:
//
//   - the runs: id, status, dates, seed, version, note, and each suite's YAML (folded);
//   - the environment fingerprint of every target, all keys, one column per target, the keys
//     on which targets differ highlighted;
//   - per workload: which direction is better for each metric; a bar chart per headline
//     metric (mean by path, grouped by target, 95 % CI whiskers, n, and ×host, the mean as
//     a fraction of the host-network baseline), the CPU cost per unit of work among them; for
//     tcp-rr and tcp-crr one latency chart of p50, p90 and p99 (instead of one chart each);
//     and a table of n, median, mean, 95 % CI, trimmed mean, outliers and ×host, with the
//     non-headline metrics in a folded table;
//   - per workload run at several pair counts, before its first section: the aggregate rate
//     and Jain's fairness index against the pair count N, a line per target and path with
//     its 95 % CI as a shaded band;
//   - under the verdict, a forest plot of its comparisons: each ratio to the reference and its
//     95 % interval on a log axis (differences, for loss, on their own), coloured by verdict;
//   - per cell, its verdict metric sample by sample: round by round, a series per target, and
//     as a strip per target with the mean and its 95 % interval, outliers ringed, failed
//     samples crossed.
//
// When docs holds several runs, targets are labelled RUN/TARGET and never pooled.
func WriteHTML(w io.Writer, docs []Document) error { return WriteHTMLWith(w, docs, HTMLOptions{}) }

// htmlPage turns the model into the template's data, drawing the charts.
func (m model) htmlPage() htmlPage {
	colours := newPathColours(m.paths)
	var p htmlPage
	var ids []string
	for i, d := range m.docs {
		ids = append(ids, d.Run.ID)
		started, finished, took := runDates(d)
		var names []string
		for _, t := range m.targets {
			if t.doc == i {
				names = append(names, t.name)
			}
		}
		p.Runs = append(p.Runs, htmlRun{ID: d.Run.ID, Status: d.Run.Status, Started: started, Finished: finished, Took: took,
			Version: d.Run.Version, Note: d.Run.Note, Suite: d.Run.Suite, Seed: d.Run.Seed, Targets: strings.Join(names, ", "),
			Labels: label.Set(d.Run.Labels).String()})
	}
	p.Title = "cnibench report: " + strings.Join(ids, ", ")
	for _, d := range m.docs {
		run := ""
		if len(m.docs) > 1 {
			run = "run " + d.Run.ID + ": "
		}
		p.Verdict = append(p.Verdict, htmlVerdicts(run, d.Verdict)...)
		p.Forests = append(p.Forests, htmlForests(run, d.Verdict, colours)...)
		if d.Reference != nil {
			p.References = append(p.References, htmlReference(d.Reference, d.Targets))
		}
		p.Profiles = append(p.Profiles, htmlProfiles(run, d.Profiles)...)
		p.History = append(p.History, htmlHistories(run, d.History, d.Run.ID)...)
	}
	for _, t := range m.targets {
		p.EnvHead = append(p.EnvHead, t.label)
	}
	for _, k := range m.envKeys() {
		row := htmlEnvRow{Key: k, Differs: len(m.targets) > 1 && m.envDiffers(k)}
		for _, t := range m.targets {
			row.Values = append(row.Values, t.fingerprint[k])
		}
		p.Env = append(p.Env, row)
	}
	p.Head = rowHeader()
	parts := m.concurrencyParts(colours)
	for _, s := range m.sections {
		hs := m.htmlSection(s, colours)
		hs.Concurrency = parts[s.workload]
		p.Sections = append(p.Sections, hs)
	}
	return p
}

// htmlSection draws the charts of a workload and formats its tables.
func (m model) htmlSection(s section, colours pathColours) htmlSection {
	hs := htmlSection{Workload: s.workload, Anchor: "w-" + anchor(s.workload)}
	metrics := s.headlineMetrics()
	hs.Higher, hs.Lower = directions(metrics)
	percentile := map[string]bool{}
	for _, p := range percentileMetrics() {
		percentile[p] = true
	}
	drewPercentiles := false
	for _, metric := range metrics {
		if percentile[metric] {
			// The percentiles share one chart, drawn where the first of them would be.
			if !drewPercentiles {
				drewPercentiles = true
				hs.Charts = append(hs.Charts, m.percentileChart(s, colours))
			}
			continue
		}
		hs.Charts = append(hs.Charts, m.metricChart(s, metric, colours))
	}
	hs.Rounds = m.htmlRounds(s, colours)
	for i, r := range s.rows {
		row := htmlTableRow{Cells: m.rowCells(r), First: i == 0 || s.rows[i-1].Metric != r.Metric}
		if analysis.Headline(r.Row) {
			hs.Rows = append(hs.Rows, row)
		} else {
			hs.Other = append(hs.Other, row)
		}
	}
	return hs
}

// anchor makes a fragment identifier out of a workload id.
func anchor(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, s)
}

// better describes the direction of improvement of a metric.
func better(metric string) string {
	spec, ok := catalog.Lookup(metric)
	switch {
	case !ok:
		return ""
	case spec.HigherIsBetter:
		return "↑ higher is better"
	}
	return "↓ lower is better"
}

// chartBarOf is the bar of one row, its tooltip spelling out every figure.
func (m model) chartBarOf(r reportRow, name string) chartBar {
	s := r.Summary
	note := ofHost(r.Row)
	if note != "" && note != "baseline" {
		note += " host"
	}
	tip := fmt.Sprintf("%s · %s · %s: mean %s %s, 95 %% CI %s, median %s, n=%d", m.targets[r.target].label, r.Path, r.Metric,
		analysis.Num(s.Mean), r.Unit, ciOf(s), analysis.Num(s.Median), s.N)
	if r.Failed > 0 {
		tip += fmt.Sprintf(" (+%d failed)", r.Failed)
	}
	return chartBar{Name: name, Value: s.Mean, Low: s.CILow, High: s.CIHigh, Note: note, Tooltip: tip}
}

// cells indexes a section's rows by target, path and metric.
func (s section) cells() map[[3]string]reportRow {
	c := map[[3]string]reportRow{}
	for _, r := range s.rows {
		c[[3]string{fmt.Sprint(r.target), r.Path, r.Metric}] = r
	}
	return c
}

// metricChart is the chart of one metric of a workload: a bar per target and path.
func (m model) metricChart(s section, metric string, colours pathColours) htmlChart {
	spec, _ := catalog.Lookup(metric)
	c := barChart{Title: s.workload + ": " + metric, Unit: "mean " + metric, Colours: colours}
	if spec.Unit != "" {
		c.Unit += " (" + spec.Unit + ")"
	}
	cells := s.cells()
	for ti, t := range m.targets {
		for _, p := range m.paths {
			r, ok := cells[[3]string{fmt.Sprint(ti), p, metric}]
			if !ok {
				continue
			}
			c.Rows = append(c.Rows, chartRow{Group: t.label, Path: p, N: r.Summary.N, Bars: []chartBar{m.chartBarOf(r, "")}})
		}
	}
	return htmlChart{Title: metric, Better: better(metric), Description: spec.Description, SVG: template.HTML(c.SVG())}
}

// percentileChart draws the latency percentiles of a request/response workload: per target
// and path a bar for each of p50, p90 and p99, darkest for p50.
func (m model) percentileChart(s section, colours pathColours) htmlChart {
	names := percentileMetrics()
	shades := []float64{0, 0.35, 0.6}
	unit := ""
	if spec, ok := catalog.Lookup(names[0]); ok {
		unit = spec.Unit
	}
	c := barChart{Title: s.workload + ": latency percentiles", Unit: "mean of per-sample percentile (" + unit + ")", Colours: colours}
	for i, n := range names {
		c.Shades = append(c.Shades, legendShade{Name: strings.TrimSuffix(strings.TrimPrefix(n, "latency_"), "_us"), Shade: shades[i]})
	}
	cells := s.cells()
	for ti, t := range m.targets {
		for _, p := range m.paths {
			row := chartRow{Group: t.label, Path: p, N: -1}
			for i, metric := range names {
				r, ok := cells[[3]string{fmt.Sprint(ti), p, metric}]
				if !ok {
					continue
				}
				b := m.chartBarOf(r, c.Shades[i].Name)
				b.Shade = shades[i]
				row.Bars = append(row.Bars, b)
				row.N = r.Summary.N
			}
			if len(row.Bars) > 0 {
				c.Rows = append(c.Rows, row)
			}
		}
	}
	return htmlChart{Title: "latency percentiles", Better: better(names[0]),
		Description: "Median, 90th and 99th percentile round-trip time of one request/response" + connectNote(s.workload) + "; whiskers are the 95 % CI of the mean over samples.",
		SVG:         template.HTML(c.SVG())}
}

// connectNote says where a kind's latencies include the TCP handshake (tcp-crr).
func connectNote(workload string) string {
	if k, _ := engine.LookupKind(analysis.WorkloadKind(workload)); k.ConnectInLatency {
		return " (connect included)"
	}
	return ""
}

// pageTemplate is the whole page. Its CSS is inline and it loads nothing: the
// Content-Security-Policy (default-src 'none') makes the browser refuse any fetch, so a
// report stays readable offline and opening it leaks nothing.
const pageTemplate = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
:root { --ink: #1f2328; --muted: #59636e; --line: #d1d9e0; --soft: #f6f8fa; --accent: #0969da; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--ink); background: #fff; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", Arial, sans-serif; }
main { max-width: 1240px; margin: 0 auto; padding: 20px 24px 48px; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 32px 0 8px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 15px; margin: 20px 0 6px; }
p, ul { margin: 6px 0; }
code, pre { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 12.5px; }
pre { background: var(--soft); border: 1px solid var(--line); border-radius: 6px; padding: 8px 10px; overflow: auto; max-height: 480px; }
table { border-collapse: collapse; margin: 6px 0 12px; font-size: 13px; font-variant-numeric: tabular-nums; }
table.verdict tr.first td { border-top: 2px solid var(--muted); }
th, td { border: 1px solid var(--line); padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: var(--soft); font-weight: 600; }
table.figures td, table.figures th { white-space: nowrap; }
table.figures td:nth-child(n+5) { text-align: right; }
table.figures tr.first td { border-top: 2px solid #8c959f; }
tr.differs th, tr.differs td { background: #fff8c5; }
.scroll { overflow-x: auto; }
.muted { color: var(--muted); }
.status { display: inline-block; padding: 0 6px; border-radius: 10px; font-size: 12px; font-weight: 600; background: #dafbe1; color: #116329; }
.status-partial, .status-running { background: #fff1c2; color: #7d4e00; }
.status-failed { background: #ffebe9; color: #a40e26; }
nav { margin: 8px 0 0; font-size: 13px; }
nav a { color: var(--accent); text-decoration: none; margin-right: 12px; white-space: nowrap; }
details { margin: 6px 0; }
summary { cursor: pointer; color: var(--accent); }
.note { background: var(--soft); border-left: 3px solid var(--accent); padding: 6px 10px; margin: 8px 0; font-size: 13px; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(560px, 1fr)); gap: 14px; margin: 10px 0; }
figure { margin: 0; border: 1px solid var(--line); border-radius: 6px; padding: 8px 10px 4px; background: #fff; }
figcaption { font-size: 13px; margin-bottom: 4px; }
figcaption b { font-size: 14px; }
figcaption .better { float: right; color: var(--muted); font-size: 12px; }
figcaption .desc { display: block; color: var(--muted); font-size: 12px; }
p.links { font-size: 12px; margin: 4px 0; } p.links a, nav.site a { color: var(--accent); }
svg.chart { display: block; width: 100%; max-width: 600px; height: auto; margin: 0 auto; }
@media print { .charts { display: block; } figure { break-inside: avoid; margin-bottom: 8px; } }
</style>
</head>
<body>
<main>
{{with .Nav}}<nav class="site">{{range .}}<a href="{{.URL}}">{{.Name}}</a> {{end}}</nav>{{end}}
<h1>{{.Title}}</h1>
<nav>{{range .Sections}}{{with .Concurrency}}<a href="#{{.Anchor}}">{{.Title}}</a> {{end}}<a href="#{{.Anchor}}">{{.Workload}}</a> {{end}}<a href="#environment">environment</a></nav>
{{if .Verdict}}
<h2 id="verdict">Verdict</h2>
<p class="desc">Each workload's headline metric (UDP: loss at the offered rate), best first: mean [95 % CI]; x = ratio of the means to the reference's, pp = difference in percentage points (loss); p: paired t on the per-round differences where rounds measured both ("paired", the rounds one side missed left out), else Mann-Whitney U (loss: Welch's t), Holm-adjusted; could detect: the difference called 4 times in 5 at the adjusted level; within: shown equivalent at the precision loop's margin.</p>
<div class="scroll"><table class="verdict">
<tr><th>Workload and metric</th><th>Target or path</th><th>Mean [95 % CI]</th><th>x</th><th>Verdict</th><th>n</th></tr>
{{range .Verdict}}{{$title := .Title}}{{range $i, $r := .Rows}}<tr{{if eq $i 0}} class="first"{{end}}><td>{{if eq $i 0}}{{$title}}{{end}}</td><td>{{$r.Name}}</td><td>{{$r.Mean}} {{$r.CI}}</td><td>{{$r.Ratio}}</td><td>{{if $r.Decided}}<b>{{$r.Verdict}}</b>{{else}}{{$r.Verdict}}{{end}}</td><td>{{$r.N}}</td></tr>
{{end}}{{end}}</table></div>
{{if .Forests}}<div class="charts">
{{range .Forests}}{{template "figure" .}}{{end}}</div>{{end}}
{{end}}
{{range .References}}
<h2>Beside the study</h2>
<p class="desc">{{.Study}}<br>This run: {{.Setup}}</p>
<div class="scroll"><table class="verdict">
<tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table></div>
{{end}}
{{if .History}}
<h2 id="history">History</h2>
<p class="desc">Each cell's verdict metric over the stored runs up to this one (ringed), one dot per run (its mean), oldest left; a horizontal line is a segment's mean, a dashed line a change point (E-Divisive means with a t test between segments, as Apache Otava: red for the worse, green for the better), with the step's ratio and 95 % interval in the caption.</p>
{{range .History}}<figure><figcaption><b>{{.Title}}</b><span class="desc">{{.Line}}</span></figcaption>
<div class="scroll">{{.SVG}}</div>
</figure>
{{end}}{{end}}
{{if .Profiles}}
<h2 id="profiles">Where the CPU goes</h2>
<p class="desc">Flame graphs of the host's busy CPU samples during the measured windows (perf): each box is a function, as wide as the samples it was on the stack of, its callers below it; warm colours are the kernel's, cool ones user code. Hover a box for its share.</p>
{{range .Profiles}}<figure><figcaption><b>{{.Title}}</b><span class="desc">{{.Line}}</span></figcaption>
<div class="scroll">{{.SVG}}</div>
</figure>
{{end}}{{end}}
<h2>Runs</h2>
<div class="scroll"><table>
<tr><th>Run</th><th>Status</th><th>Started</th><th>Finished</th><th>Took</th><th>Seed</th><th>Version</th><th>Targets</th><th>Labels</th><th>Note</th></tr>
{{range .Runs}}<tr><td><code>{{.ID}}</code></td><td><span class="status status-{{.Status}}">{{.Status}}</span></td><td>{{.Started}}</td><td>{{.Finished}}</td><td>{{.Took}}</td><td>{{.Seed}}</td><td>{{.Version}}</td><td>{{.Targets}}</td><td>{{.Labels}}</td><td>{{.Note}}</td></tr>
{{end}}</table></div>
{{range .Runs}}{{if .Suite}}<details><summary>Suite of run {{.ID}} (YAML)</summary><pre>{{.Suite}}</pre></details>
{{end}}{{end}}
<p class="note">Bars show the <b>mean</b> over the measured samples (warm-up excluded); whiskers are the <b>95 % confidence interval of the mean</b> (Student's t; marked <b>c</b> where it is the t-interval clipped to the metric's range; none where n &lt; 2; a cell whose samples form two separate groups is marked <b>bimodal</b>); <b>n</b> is the number of samples. <b>×host</b> is the mean as a fraction of the host-network path of the same target, the node-to-node baseline. Colours stand for paths, the same in every chart. Outliers (Tukey fences) are counted in the tables, never dropped.</p>

<h2 id="environment">Environment</h2>
{{if .Env}}<div class="scroll"><table>
<tr><th>Key</th>{{range .EnvHead}}<th>{{.}}</th>{{end}}</tr>
{{range .Env}}<tr{{if .Differs}} class="differs" title="the targets differ"{{end}}><th>{{.Key}}</th>{{range .Values}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table></div>
{{if gt (len .EnvHead) 1}}<p class="muted">Highlighted keys differ between targets.</p>{{end}}
{{else}}<p class="muted">No fingerprint was recorded.</p>{{end}}

{{range .Sections}}
{{with .Concurrency}}<section id="{{.Anchor}}" class="concurrency">
<h2>{{.Title}}</h2>
<p class="note">The same workload at N = {{.Levels}} client/server pairs running at once. Lines join the <b>means</b> at each pair count (the levels are equally spaced, not to scale); shaded bands are the <b>95 % confidence interval of the mean</b>. Line colours stand for paths, as in the bar charts.</p>
<div class="charts">
{{range .Charts}}{{template "figure" .}}{{end}}</div>
</section>
{{end}}
<section id="{{.Anchor}}">
<h2>{{.Workload}}</h2>
<p class="note">{{if .Higher}}<b>Higher is better</b> (↑): {{range $i, $m := .Higher}}{{if $i}}, {{end}}<code>{{$m}}</code>{{end}}.{{end}}
{{if .Lower}}<b>Lower is better</b> (↓): {{range $i, $m := .Lower}}{{if $i}}, {{end}}<code>{{$m}}</code>{{end}}.{{end}}</p>
<div class="charts">
{{range .Charts}}{{template "figure" .}}{{end}}</div>
{{if .Rounds}}<h3>{{.Workload}} round by round</h3>
<p class="desc">Each cell's verdict metric, one mark per sample: left in the order of the rounds (a dotted line at each target's mean), right all of them at once with the mean and its 95 % interval. A drift, a step or a lone outlier shows here before it shows in a mean.</p>
<div class="charts">
{{range .Rounds}}{{template "figure" .}}{{end}}</div>{{end}}
<div class="scroll"><table class="figures">
<tr>{{range $.Head}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr{{if .First}} class="first"{{end}}>{{range .Cells}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table></div>
{{if .Other}}<details><summary>Other metrics of {{.Workload}}</summary><div class="scroll"><table class="figures">
<tr>{{range $.Head}}<th>{{.}}</th>{{end}}</tr>
{{range .Other}}<tr{{if .First}} class="first"{{end}}>{{range .Cells}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table></div></details>{{end}}
</section>
{{end}}
</main>
</body>
</html>
{{define "figure"}}<figure><figcaption><span class="better">{{.Better}}</span><b>{{.Title}}</b><span class="desc">{{.Description}}</span></figcaption>
{{.SVG}}
{{with .Links}}<p class="links">samples: {{range $i, $l := .}}{{if $i}} · {{end}}<a href="{{$l.URL}}">{{$l.Name}}</a>{{end}}</p>{{end}}
</figure>
{{end}}`
