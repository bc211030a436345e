package report

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/internal/analysis"
	"github.com/cnibench/cnibench/internal/record"
)

// Geometry of a forest plot: a row per comparison, grouped by workload, the label left, the
// estimate and its interval on a common axis in the middle, the figures right.
const (
	forestRowH    = 18.0
	forestLabelW  = 34 // runes of a row label; longer ones are cut (the full text is in the tooltip)
	forestMinPlot = 200.0
	nsColour      = "#8c959f"
)

// htmlForests draws the forest plots of a run's verdict (analysis.Forest): one of the ratios
// on a log axis and, where a metric is compared on the difference scale (UDP loss), one of
// the differences; prefix names the run on a page of several.
func htmlForests(prefix string, lines []analysis.VerdictLine, colours pathColours) []htmlChart {
	var ratios, diffs []analysis.ForestRow
	// In the verdict table's order: the measured workloads, then the setup figures.
	measured, setup := splitSetup(lines)
	for _, r := range analysis.Forest(append(measured, setup...)) {
		if r.Points {
			diffs = append(diffs, r)
		} else {
			ratios = append(ratios, r)
		}
	}
	var out []htmlChart
	if len(ratios) > 0 {
		c := forestChart{Title: prefix + "verdict: ratios to the reference", Rows: ratios, Colours: colours, Unit: "ratio of the means (log scale)"}
		out = append(out, htmlChart{Title: prefix + "The verdict's ratios", Better: "a point right of 1 is a larger mean",
			Description: "Each comparison of the verdict table: the ratio of the means to the reference's and its 95 % interval, on a log axis; the line at 1 is no difference. Red: significantly worse, green: significantly better (Holm-adjusted), grey: not significant.",
			SVG:         template.HTML(c.SVG())}) //nolint:gosec // built from escaped text
	}
	if len(diffs) > 0 {
		c := forestChart{Title: prefix + "verdict: differences from the reference", Rows: diffs, Colours: colours, Unit: "difference of the means (" + diffs[0].Unit + ")"}
		out = append(out, htmlChart{Title: prefix + "The verdict's differences", Better: "a point right of 0 is a larger mean",
			Description: "The comparisons made on the difference scale (UDP loss, in percentage points): the difference of the means from the reference's and its 95 % interval; the line at 0 is no difference. Colours as in the ratios.",
			SVG:         template.HTML(c.SVG())}) //nolint:gosec // built from escaped text
	}
	return out
}

// forestChart draws comparisons as a forest plot.
type forestChart struct {
	Title   string
	Unit    string
	Rows    []analysis.ForestRow // all ratios, or all differences
	Colours pathColours
}

// logScale says the rows are ratios, drawn on a log axis.
func (c forestChart) logScale() bool { return len(c.Rows) > 0 && !c.Rows[0].Points }

// neutral is the estimate of no difference: 1 for a ratio, 0 for a difference.
func (c forestChart) neutral() float64 {
	if c.logScale() {
		return 1
	}
	return 0
}

// forestLabel is the text left of a row: where, and what is compared with what.
func forestLabel(r analysis.ForestRow) string {
	if r.Path == "" {
		return r.Name + " vs " + r.Against
	}
	return r.Path + ": " + r.Name + " vs " + r.Against
}

// forestFigures is the text right of a row: the estimate and its interval.
func forestFigures(r analysis.ForestRow) string {
	if r.Points {
		s := analysis.Pct(r.Estimate)
		if r.Estimate > 0 {
			s = "+" + s
		}
		if !math.IsNaN(r.Low) && !math.IsNaN(r.High) {
			s += " [" + analysis.Pct(r.Low) + ", " + analysis.Pct(r.High) + "]"
		}
		return s
	}
	s := "x" + analysis.Num(r.Estimate)
	if !math.IsNaN(r.Low) && !math.IsNaN(r.High) {
		s += " " + ci(r.Low, r.High)
	}
	return s
}

// forestColour is a row's colour by its verdict.
func forestColour(r analysis.ForestRow) string {
	switch r.Verdict {
	case "worse":
		return worseColour
	case "better":
		return betterColour
	}
	return nsColour
}

// domain is the range the axis shows: every estimate and bound and the neutral value, the
// ratios' non-positive figures left out (a log axis cannot show them; they are clipped).
func (c forestChart) domain() (lo, hi float64) {
	lo, hi = c.neutral(), c.neutral()
	for _, r := range c.Rows {
		for _, v := range []float64{r.Estimate, r.Low, r.High} {
			if math.IsNaN(v) || math.IsInf(v, 0) || (c.logScale() && v <= 0) {
				continue
			}
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if c.logScale() {
		// At least ±2 %, and a margin so that no point sits on the frame.
		lo, hi = math.Min(lo, 0.98), math.Max(hi, 1.02)
		pad := math.Pow(hi/lo, 0.04)
		return lo / pad, hi * pad
	}
	if hi == lo {
		return lo - 1, hi + 1
	}
	return lo, hi
}

// axisTicks are the axis' ticks and its range [lo, hi] for a plot px wide.
func (c forestChart) axisTicks(px float64) (ticks []float64, lo, hi float64) {
	lo, hi = c.domain()
	if !c.logScale() {
		ticks = niceTicks(lo, hi, 6)
		return ticks, ticks[0], ticks[len(ticks)-1]
	}
	if hi/lo <= 4 {
		// A narrow log axis is nearly linear: round values read better than powers.
		for _, t := range niceTicks(lo, hi, 6) {
			if t > 0 {
				ticks = append(ticks, t)
			}
		}
		lo, hi = math.Min(lo, ticks[0]), math.Max(hi, ticks[len(ticks)-1])
	} else {
		for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
			for _, m := range []float64{1, 2, 5} {
				if t := m * math.Pow(10, e); t >= lo && t <= hi {
					ticks = append(ticks, t)
				}
			}
		}
	}
	// Keep ticks apart, so that their labels never touch.
	x := logX(lo, hi, 0, px)
	var kept []float64
	for _, t := range ticks {
		if len(kept) == 0 {
			kept = append(kept, t)
			continue
		}
		prev := kept[len(kept)-1]
		if x(t)-x(prev) >= (textWidth(ratioLabel(t), chartSmall)+textWidth(ratioLabel(prev), chartSmall))/2+10 {
			kept = append(kept, t)
		}
	}
	return kept, lo, hi
}

// ratioLabel prints a tick of the ratio axis in its shortest form.
func ratioLabel(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

// logX maps [lo, hi] onto [x0, x1] on a log scale, clipping what lies outside.
func logX(lo, hi, x0, x1 float64) func(float64) float64 {
	return func(v float64) float64 {
		if v <= lo {
			return x0
		}
		return x0 + math.Min(math.Log(v/lo)/math.Log(hi/lo), 1)*(x1-x0)
	}
}

// SVG renders the forest plot as a standalone <svg> element.
func (c forestChart) SVG() string {
	figW := 60.0
	for _, r := range c.Rows {
		figW = math.Max(figW, textWidth(forestFigures(r), chartSmall)+10)
	}
	x1 := chartWidth - chartPad - figW
	// Labels get what the plot leaves them, and are cut to it.
	runes := min(forestLabelW, int((x1-forestMinPlot-chartPad-20)/(chartSmall*charWidth)))
	labelW := 60.0
	for _, r := range c.Rows {
		labelW = math.Max(labelW, textWidth(cut(forestLabel(r), runes), chartSmall)+20)
	}
	x0 := chartPad + labelW
	ticks, lo, hi := c.axisTicks(x1 - x0)
	x := logX(lo, hi, x0, x1)
	if !c.logScale() {
		x = func(v float64) float64 { return x0 + (math.Max(math.Min(v, hi), lo)-lo)/(hi-lo)*(x1-x0) }
	}
	var body strings.Builder
	y := forestLegend(&body, chartPad)
	plotTop := y
	prev := ""
	for _, r := range c.Rows {
		if g := (record.Cell{Workload: r.Workload, Pairs: r.Pairs}).WorkloadLabel() + " · " + r.Metric; g != prev {
			fmt.Fprintf(&body, `<text x="%.1f" y="%.1f" font-weight="600" fill="%s">%s</text>`+"\n", chartPad, y+14, inkColour, svgText(g))
			y += groupHeadH
			prev = g
		}
		c.row(&body, r, runes, y, x, lo, hi)
		y += forestRowH
	}
	plotBottom := y + 4
	height := plotBottom + axisHeight
	var out strings.Builder
	fmt.Fprintf(&out, `<svg xmlns="http://www.w3.org/2000/svg" class="chart forest" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" role="img" font-family="%s" font-size="%.0f">`+"\n",
		chartWidth, height, chartWidth, height, svgText(chartFonts), chartFont)
	fmt.Fprintf(&out, "<title>%s</title>\n", svgText(c.Title))
	for _, t := range ticks {
		fmt.Fprintf(&out, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", x(t), plotTop, x(t), plotBottom, gridColour)
	}
	n := x(c.neutral())
	fmt.Fprintf(&out, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-dasharray="4 3"/>`+"\n", n, plotTop, n, plotBottom, inkColour)
	out.WriteString(body.String())
	labels := make([]string, len(ticks))
	step := 0.0
	if len(ticks) > 1 {
		step = ticks[1] - ticks[0]
	}
	for i, t := range ticks {
		labels[i] = ratioLabel(t)
		if !c.logScale() {
			labels[i] = tickLabel(t, step)
		}
	}
	labelledAxis(&out, ticks, labels, x, plotBottom, c.Unit)
	out.WriteString("</svg>")
	return out.String()
}

// row draws one comparison: a swatch of its path, its label, its interval and estimate in the
// colour of its verdict, and its figures.
func (c forestChart) row(w *strings.Builder, r analysis.ForestRow, runes int, y float64, x func(float64) float64, lo, hi float64) {
	mid := y + forestRowH/2
	colour := forestColour(r)
	tip := fmt.Sprintf("%s %s %s: %s, %s", r.Workload, r.Metric, forestLabel(r), forestFigures(r), r.Verdict)
	swatch := r.Path
	if swatch == "" {
		swatch = r.Name
	}
	fmt.Fprintf(w, `<rect x="%.1f" y="%.1f" width="8" height="8" fill="%s"/>`+"\n", chartPad+4, mid-4, c.Colours.of(swatch))
	fmt.Fprintf(w, `<text x="%.1f" y="%.1f" font-size="%.0f" fill="%s"><title>%s</title>%s</text>`+"\n",
		chartPad+16, mid+4, chartSmall, inkColour, svgText(tip), svgText(cut(forestLabel(r), runes)))
	if !math.IsNaN(r.Low) && !math.IsNaN(r.High) && !math.IsInf(r.Low, 0) && !math.IsInf(r.High, 0) {
		wl, wh := x(r.Low), x(r.High)
		fmt.Fprintf(w, `<path d="M%.1f %.1fH%.1f`, wl, mid, wh)
		// No cap where the interval is clipped at the axis' end.
		if r.Low > lo {
			fmt.Fprintf(w, `M%.1f %.1fV%.1f`, wl, mid-4, mid+4)
		}
		if r.High < hi {
			fmt.Fprintf(w, `M%.1f %.1fV%.1f`, wh, mid-4, mid+4)
		}
		fmt.Fprintf(w, `" stroke="%s" stroke-width="1.5" fill="none"/>`+"\n", colour)
	}
	fmt.Fprintf(w, `<rect x="%.1f" y="%.1f" width="7" height="7" fill="%s"><title>%s</title></rect>`+"\n", x(r.Estimate)-3.5, mid-3.5, colour, svgText(tip))
	fmt.Fprintf(w, `<text x="%.1f" y="%.1f" text-anchor="end" font-size="%.0f" fill="%s">%s</text>`+"\n",
		chartWidth-chartPad, mid+4, chartSmall, colour, svgText(forestFigures(r)))
}

// forestLegend draws what the colours and the whisker mean; it returns the y below it.
func forestLegend(w *strings.Builder, y float64) float64 {
	x := chartPad
	for _, e := range [][2]string{{worseColour, "worse"}, {betterColour, "better"}, {nsColour, "not significant"}} {
		fmt.Fprintf(w, `<rect x="%.1f" y="%.1f" width="7" height="7" fill="%s"/>`+"\n", x, y+2.5, e[0])
		fmt.Fprintf(w, `<text x="%.1f" y="%.1f" font-size="%.0f" fill="%s">%s</text>`+"\n", x+11, y+10, chartSmall, inkColour, e[1])
		x += 11 + textWidth(e[1], chartSmall) + 14
	}
	fmt.Fprintf(w, `<path d="M%.1f %.1fh12M%.1f %.1fv8M%.1f %.1fv8" stroke="%s" stroke-width="1.5" fill="none"/>`+"\n",
		x, y+6, x, y+2, x+12, y+2, inkColour)
	fmt.Fprintf(w, `<text x="%.1f" y="%.1f" font-size="%.0f" fill="%s">95 %% interval</text>`+"\n", x+16, y+10, chartSmall, inkColour)
	return y + legendRowH + 2
}
