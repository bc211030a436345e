package report

import (
	"fmt"
	"html/template"
	"math"
	"sort"
	"strings"

	"github.com/cnibench/cnibench/internal/analysis"
	"github.com/cnibench/cnibench/internal/catalog"
	"github.com/cnibench/cnibench/internal/engine"
)

// This file draws how a workload scales with concurrency: when a report holds the same
// workload at several pair counts N, the per-N sections show each level on its own, but a
// reader wants the trend, so a "concurrency" part before the workload's first section plots
// the aggregate rate and Jain's fairness index against N as line charts.

// Line chart geometry in SVG user units, next to the bar charts' (chartWidth, chartPad ...).
const (
	lineChartPlotH = 200.0 // height of the plot area
	lineXInset     = 24.0  // space between the y axis and the first (and last) pair level
	linePointR     = 3.5   // radius of a point marker
	lineBandAlpha  = 0.18  // fill opacity of a CI band: light enough for bands to overlap
)

// targetDashes are the stroke patterns that tell targets apart, the colour being the path's;
// the first target is drawn solid.
func targetDashes() []string { return []string{"", "7 4", "2 3", "9 3 2 3"} }

// htmlConcurrency is the concurrency part of one workload: its charts and where it sits.
type htmlConcurrency struct {
	Anchor, Title, Levels string
	Charts                []htmlChart
}

// linePoint is the mean at one pair level with its 95 % CI; NaN bounds draw no band there.
type linePoint struct {
	Level     int // index into lineChart.Levels
	Value     float64
	Low, High float64
	Tooltip   string
}

// lineSeries is one target and path: a line through its points, in level order.
type lineSeries struct {
	Group  string // target label
	Path   string
	Dash   string // stroke-dasharray of the target; empty is solid
	Points []linePoint
}

// lineChart plots series against the pair levels, which are equally spaced on the x axis:
// counts like 1, 10, 40 or 1, 2, 4, 8, 64 would crowd at the left of a linear axis.
type lineChart struct {
	Title   string // accessible name of the chart
	Unit    string // y axis label
	Levels  []int  // the pair counts, ascending
	Series  []lineSeries
	Colours pathColours
	Targets []string // target labels in the order of targetDashes, for the legend
	// Fixed sets the y axis to [Lo, Hi] (fairness is in [0, 1]); otherwise it runs from zero
	// to the highest mean or CI bound. Either way bands are clipped to the axis, so a CI of a
	// rate never reaches below zero, nor one of a fairness index above 1.
	Fixed  bool
	Lo, Hi float64
}

// concurrencyParts returns the concurrency part of every workload (id without pairs) whose
// rows have more than one distinct pair count, keyed by the label of the workload's first
// section, before which the page shows it.
func (m model) concurrencyParts(colours pathColours) map[string]*htmlConcurrency {
	first := map[string]string{} // workload id -> label of its first section
	levels := map[string]map[int]bool{}
	rows := map[string][]reportRow{}
	var order []string
	for _, s := range m.sections {
		for _, r := range s.rows {
			w := r.Workload
			if _, ok := first[w]; !ok {
				first[w] = s.workload
				levels[w] = map[int]bool{}
				order = append(order, w)
			}
			levels[w][r.Cell().Pairs] = true
			rows[w] = append(rows[w], r)
		}
	}
	parts := map[string]*htmlConcurrency{}
	for _, w := range order {
		if len(levels[w]) < 2 {
			continue
		}
		var ns []int
		for n := range levels[w] {
			ns = append(ns, n)
		}
		sort.Ints(ns)
		if p := m.concurrencyPart(w, ns, rows[w], colours); len(p.Charts) > 0 {
			parts[first[w]] = p
		}
	}
	return parts
}

// concurrencyPart draws the charts of one workload: the aggregate rate and the fairness
// index against the pair count, each left out when no row has its metric.
func (m model) concurrencyPart(workload string, levels []int, rows []reportRow, colours pathColours) *htmlConcurrency {
	var names []string
	for _, n := range levels {
		names = append(names, fmt.Sprint(n))
	}
	p := &htmlConcurrency{Anchor: "c-" + anchor(workload), Title: workload + ": concurrency", Levels: strings.Join(names, ", ")}
	kind := analysis.WorkloadKind(workload)
	if rate := engine.RateMetric(kind); rate != "" {
		spec, _ := catalog.Lookup(rate)
		c := lineChart{Title: workload + ": aggregate " + rate + " against pairs", Unit: "mean " + rate + ", all pairs together",
			Levels: levels, Colours: colours}
		if spec.Unit != "" {
			c.Unit += " (" + spec.Unit + ")"
		}
		m.addSeries(&c, rows, rate, false)
		if len(c.Series) > 0 {
			p.Charts = append(p.Charts, htmlChart{Title: "aggregate " + rate, Better: better(rate),
				Description: "Mean " + rate + " of all N pairs together at each pair count; shaded bands are the 95 % CI of the mean.",
				SVG:         template.HTML(c.SVG())})
		}
	}
	spec, _ := catalog.Lookup(catalog.Fairness)
	c := lineChart{Title: workload + ": " + catalog.Fairness + " against pairs", Unit: "mean " + catalog.Fairness + " (" + spec.Unit + ")",
		Levels: levels, Colours: colours, Fixed: true, Lo: 0, Hi: 1}
	m.addSeries(&c, rows, catalog.Fairness, true)
	// Only the N = 1 points, which are 1 by definition, would say nothing.
	measured := false
	for _, s := range c.Series {
		for _, pt := range s.Points {
			measured = measured || levels[pt.Level] > 1
		}
	}
	if measured {
		p.Charts = append(p.Charts, htmlChart{Title: catalog.Fairness, Better: better(catalog.Fairness),
			Description: spec.Description + " One pair is fair by definition (1, no band).", SVG: template.HTML(c.SVG())})
	}
	return p
}

// addSeries adds to c a series per target and path that has metric at some level, in the
// report's target and path order. With onePairIsOne the metric is taken as exactly 1 at
// N = 1 for every series that ran there (fairness: a lone pair has all of the rate).
func (m model) addSeries(c *lineChart, rows []reportRow, metric string, onePairIsOne bool) {
	type key struct {
		target int
		path   string
		pairs  int
	}
	at := map[key]reportRow{}
	ran := map[key]bool{}
	for _, r := range rows {
		k := key{r.target, r.Path, r.Cell().Pairs}
		ran[k] = true
		if r.Metric == metric {
			at[k] = r
		}
	}
	dashes := targetDashes()
	used := map[int]bool{}
	for ti, t := range m.targets {
		for _, path := range m.paths {
			s := lineSeries{Group: t.label, Path: path, Dash: dashes[ti%len(dashes)]}
			for li, n := range c.Levels {
				k := key{ti, path, n}
				what := fmt.Sprintf("%s · %s · N=%d: ", t.label, path, n)
				if onePairIsOne && n == 1 && ran[k] {
					s.Points = append(s.Points, linePoint{Level: li, Value: 1, Low: math.NaN(), High: math.NaN(),
						Tooltip: what + metric + " 1 (one pair)"})
					continue
				}
				r, ok := at[k]
				if !ok || !finite(r.Summary.Mean) {
					continue
				}
				sm := r.Summary
				tip := fmt.Sprintf("%s%s mean %s %s, 95 %% CI %s, median %s, n=%d", what, metric, analysis.Num(sm.Mean), r.Unit,
					ciOf(sm), analysis.Num(sm.Median), sm.N)
				if r.Failed > 0 {
					tip += fmt.Sprintf(" (+%d failed)", r.Failed)
				}
				s.Points = append(s.Points, linePoint{Level: li, Value: sm.Mean, Low: sm.CILow, High: sm.CIHigh, Tooltip: tip})
			}
			if len(s.Points) > 0 {
				c.Series = append(c.Series, s)
				used[ti] = true
			}
		}
	}
	// The legend explains the dashes only when there is more than one target to tell apart.
	if len(used) > 1 {
		for ti, t := range m.targets {
			if used[ti] {
				c.Targets = append(c.Targets, t.label)
			}
		}
	}
}

// finite reports whether v is neither NaN nor infinite.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// yTicks are the ticks of the chart's y axis; the first and last bound it.
func (c lineChart) yTicks() []float64 {
	if c.Fixed {
		return niceTicks(c.Lo, c.Hi, 6)
	}
	lo, hi := 0.0, 0.0
	for _, s := range c.Series {
		for _, p := range s.Points {
			for _, v := range []float64{p.Value, p.High} {
				if finite(v) {
					hi = math.Max(hi, v)
				}
			}
			// As in the bar charts, only a negative mean extends the axis below zero.
			lo = math.Min(lo, p.Value)
		}
	}
	if hi == lo {
		hi = lo + 1
	}
	return niceTicks(lo, hi, 6)
}

// SVG renders the chart as a standalone <svg> element: legend, y axis label, plot with grid,
// CI bands, lines and point markers, then the pair axis.
func (c lineChart) SVG() string {
	ticks := c.yTicks()
	lo, hi := ticks[0], ticks[len(ticks)-1]
	floor := lo
	if !c.Fixed {
		floor = math.Max(lo, 0) // a rate is never negative, whatever its t-interval says
	}
	step := ticks[1] - ticks[0]
	tickW := 0.0
	for _, t := range ticks {
		tickW = math.Max(tickW, textWidth(tickLabel(t, step), chartSmall))
	}
	x0, x1 := chartPad+tickW+8, chartWidth-chartPad-8
	x := func(level int) float64 {
		if len(c.Levels) < 2 {
			return (x0 + x1) / 2
		}
		return x0 + lineXInset + float64(level)*(x1-x0-2*lineXInset)/float64(len(c.Levels)-1)
	}

	var body strings.Builder
	y := c.legend(&body, chartPad)
	fmt.Fprintf(&body, `<text x="%.1f" y="%.1f" font-size="%.0f" fill="%s">%s</text>`+"\n", chartPad, y+10, chartSmall, inkColour, svgText(c.Unit))
	plotTop := y + 22
	plotBottom := plotTop + lineChartPlotH
	yOf := func(v float64) float64 { return plotBottom - (v-lo)/(hi-lo)*(plotBottom-plotTop) }
	clamp := func(v float64) float64 { return math.Min(math.Max(v, floor), hi) }

	// Grid and y axis first, so that bands, lines and points are drawn over them.
	for _, t := range ticks {
		fmt.Fprintf(&body, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", x0, yOf(t), x1, yOf(t), gridColour)
		fmt.Fprintf(&body, `<text class="y-tick" x="%.1f" y="%.1f" text-anchor="end" font-size="%.0f" fill="%s">%s</text>`+"\n",
			x0-6, yOf(t)+4, chartSmall, mutedColour, svgText(tickLabel(t, step)))
	}
	fmt.Fprintf(&body, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", x0, plotTop, x0, plotBottom, mutedColour)
	// All bands go under all lines: a band must never hide another series' line.
	for _, s := range c.Series {
		c.band(&body, s, x, func(v float64) float64 { return yOf(clamp(v)) })
	}
	for _, s := range c.Series {
		colour := c.Colours.of(s.Path)
		var pts []string
		for _, p := range s.Points {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(p.Level), yOf(clamp(p.Value))))
		}
		dash := ""
		if s.Dash != "" {
			dash = fmt.Sprintf(` stroke-dasharray="%s"`, svgText(s.Dash))
		}
		fmt.Fprintf(&body, `<polyline class="series" points="%s" fill="none" stroke="%s" stroke-width="2"%s><title>%s</title></polyline>`+"\n",
			strings.Join(pts, " "), colour, dash, svgText(s.Group+" · "+s.Path))
		for _, p := range s.Points {
			fmt.Fprintf(&body, `<circle class="point" cx="%.1f" cy="%.1f" r="%.1f" fill="%s" stroke="#fff" stroke-width="1"><title>%s</title></circle>`+"\n",
				x(p.Level), yOf(clamp(p.Value)), linePointR, colour, svgText(p.Tooltip))
		}
	}
	// The pair axis: a tick and the count N under each level.
	fmt.Fprintf(&body, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", x0, plotBottom, x1, plotBottom, mutedColour)
	for i, n := range c.Levels {
		fmt.Fprintf(&body, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", x(i), plotBottom, x(i), plotBottom+4, mutedColour)
		fmt.Fprintf(&body, `<text class="x-tick" x="%.1f" y="%.1f" text-anchor="middle" font-size="%.0f" fill="%s">%d</text>`+"\n",
			x(i), plotBottom+16, chartSmall, mutedColour, n)
	}
	fmt.Fprintf(&body, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="%.0f" fill="%s">%s</text>`+"\n",
		(x0+x1)/2, plotBottom+33, chartSmall, inkColour, svgText("pairs N (levels equally spaced)"))
	height := plotBottom + axisHeight

	var out strings.Builder
	fmt.Fprintf(&out, `<svg xmlns="http://www.w3.org/2000/svg" class="chart line-chart" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" role="img" font-family="%s" font-size="%.0f">`+"\n",
		chartWidth, height, chartWidth, height, svgText(chartFonts), chartFont)
	fmt.Fprintf(&out, "<title>%s</title>\n", svgText(c.Title))
	out.WriteString(body.String())
	out.WriteString("</svg>")
	return out.String()
}

// band shades the 95 % CI of a series: a polygon along the upper bounds, then back along the
// lower ones. A point without a CI (n < 2, or fairness at N = 1) pinches the band to its mean
// rather than breaking it; a series without any CI gets no band.
func (c lineChart) band(w *strings.Builder, s lineSeries, x func(int) float64, y func(float64) float64) {
	var upper, lower []string
	banded := false
	for _, p := range s.Points {
		lo, hi := p.Low, p.High
		if finite(lo) && finite(hi) {
			banded = true
		} else {
			lo, hi = p.Value, p.Value
		}
		upper = append(upper, fmt.Sprintf("%.1f,%.1f", x(p.Level), y(hi)))
		lower = append([]string{fmt.Sprintf("%.1f,%.1f", x(p.Level), y(lo))}, lower...)
	}
	if !banded {
		return
	}
	fmt.Fprintf(w, `<polygon class="band" points="%s" fill="%s" fill-opacity="%.2f" stroke="none"><title>%s</title></polygon>`+"\n",
		strings.Join(append(upper, lower...), " "), c.Colours.of(s.Path), lineBandAlpha, svgText(s.Group+" · "+s.Path+": 95 % CI of the mean"))
}

// legend draws a line sample per path, a dash sample per target when there are several, and
// the band, flowing onto more lines when they do not fit; it returns the y below it.
func (c lineChart) legend(w *strings.Builder, y float64) float64 {
	type entry struct {
		name, colour, dash string
		band               bool
	}
	var entries []entry
	seen := map[string]bool{}
	for _, s := range c.Series {
		if !seen[s.Path] {
			seen[s.Path] = true
			entries = append(entries, entry{name: s.Path, colour: c.Colours.of(s.Path)})
		}
	}
	dashes := targetDashes()
	for i, t := range c.Targets {
		entries = append(entries, entry{name: cut(t, maxLabelRune), colour: inkColour, dash: dashes[i%len(dashes)]})
	}
	entries = append(entries, entry{name: "95 % CI of the mean", colour: mutedColour, band: true})
	x := chartPad
	for _, e := range entries {
		wd := 24 + textWidth(e.name, chartSmall) + 14
		if x+wd > chartWidth-chartPad && x > chartPad {
			x, y = chartPad, y+legendRowH
		}
		if e.band {
			fmt.Fprintf(w, `<rect x="%.1f" y="%.1f" width="20" height="11" fill="%s" fill-opacity="%.2f"/>`+"\n", x, y+0.5, e.colour, lineBandAlpha*2)
		} else {
			dash := ""
			if e.dash != "" {
				dash = fmt.Sprintf(` stroke-dasharray="%s"`, svgText(e.dash))
			}
			fmt.Fprintf(w, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s/>`+"\n", x, y+6, x+20, y+6, e.colour, dash)
		}
		fmt.Fprintf(w, `<text x="%.1f" y="%.1f" font-size="%.0f" fill="%s">%s</text>`+"\n", x+24, y+10, chartSmall, inkColour, svgText(e.name))
		x += wd
	}
	return y + legendRowH
}
