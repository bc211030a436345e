package report

import (
	"fmt"
	"html/template"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/internal/analysis"
	"github.com/cnibench/cnibench/internal/record"
)

// Geometry of a cell's rounds chart: the rounds panel left, the strip panel right, sharing
// the value axis.
const (
	roundsPlotH  = 150.0
	roundsLeft   = 58.0 // room for the value axis' labels
	roundsBottom = 44.0 // room for the round numbers, the strip labels and the titles
	stripColumn  = 64.0 // width of a target's strip
	panelGap     = 22.0
	markerR      = 3.2
)

// roundsChart draws one cell's verdict metric sample by sample (analysis.CellRounds): left,
// each target's samples round by round, joined, their mean dashed, failed samples crossed at
// the foot; right, the same samples as a strip per target with their mean and its 95 %
// interval. Outliers (Tukey) are ringed in both. Targets keep one marker throughout the page.
type roundsChart struct {
	Cell   analysis.CellRounds
	Colour string            // the path's
	Marker map[string]int    // target name to its marker (its index among the page's targets)
	Label  map[string]string // target name to its label on the page
}

// htmlRounds draws the rounds charts of a section's cells: every document's cells of the
// section's workload, titled with the run's id on a page of several.
func (m model) htmlRounds(s section, colours pathColours) []htmlChart {
	var out []htmlChart
	for i, d := range m.docs {
		for _, c := range d.Rounds {
			if (record.Cell{Workload: c.Workload, Pairs: c.Pairs}).WorkloadLabel() != s.workload {
				continue
			}
			rc := roundsChart{Cell: c, Colour: colours.of(c.Path), Marker: map[string]int{}, Label: map[string]string{}}
			for ti, t := range m.targets {
				if t.doc == i {
					rc.Marker[t.name], rc.Label[t.name] = ti, t.label
				}
			}
			// Series in the page's order of targets, as the bar charts group them.
			rc.Cell.Series = slices.Clone(c.Series)
			slices.SortStableFunc(rc.Cell.Series, func(a, b analysis.TargetRounds) int { return rc.Marker[a.Target] - rc.Marker[b.Target] })
			title := c.Path
			if len(m.docs) > 1 {
				title = d.Run.ID + ": " + title
			}
			out = append(out, htmlChart{Title: title + " · " + c.Metric, Better: better(c.Metric), Description: roundsCaption(c),
				SVG: template.HTML(rc.SVG())}) //nolint:gosec // built from escaped text
		}
	}
	return out
}

// roundsCaption counts what a cell's chart shows.
func roundsCaption(c analysis.CellRounds) string {
	n, failed, outliers := 0, 0, 0
	for _, s := range c.Series {
		n += len(s.Points)
		failed += len(s.Failed)
		outliers += len(s.Summary.Outliers)
	}
	out := fmt.Sprintf("%d samples of %d targets", n, len(c.Series))
	if len(c.Series) == 1 {
		out = fmt.Sprintf("%d samples", n)
	}
	if outliers > 0 {
		out += fmt.Sprintf(", %d outside the Tukey fences (ringed)", outliers)
	}
	if failed > 0 {
		out += fmt.Sprintf(", %d failed (crossed)", failed)
	}
	return out + "."
}

// valueRange is the range of every value and interval bound of the cell.
func (c roundsChart) valueRange() (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, s := range c.Cell.Series {
		for _, p := range s.Points {
			lo, hi = math.Min(lo, p.Value), math.Max(hi, p.Value)
		}
		for _, v := range []float64{s.Summary.CILow, s.Summary.CIHigh} {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	switch {
	case math.IsInf(lo, 1):
		return 0, 1
	case hi == lo:
		d := math.Max(math.Abs(lo)*0.05, 1e-9)
		return lo - d, hi + d
	}
	return lo, hi
}

// rounds is the range of rounds the cell has samples of, failed ones included.
func (c roundsChart) rounds() (first, last int) {
	first, last = math.MaxInt, math.MinInt
	for _, s := range c.Cell.Series {
		for _, p := range s.Points {
			first, last = min(first, p.Round), max(last, p.Round)
		}
		for _, f := range s.Failed {
			first, last = min(first, f.Round), max(last, f.Round)
		}
	}
	if first > last {
		return 1, 1
	}
	return first, last
}

// SVG renders the chart as a standalone <svg> element.
func (c roundsChart) SVG() string {
	var body strings.Builder
	top := c.legend(&body, chartPad)
	bottom := top + roundsPlotH
	lo, hi := c.valueRange()
	ticks := niceTicks(lo, hi, 5)
	lo, hi = ticks[0], ticks[len(ticks)-1]
	y := func(v float64) float64 { return bottom - (v-lo)/(hi-lo)*(bottom-top) }
	k := max(len(c.Cell.Series), 1)
	stripW := math.Min(math.Max(stripColumn*float64(k), 120), 240)
	stripX := chartWidth - chartPad - stripW
	roundsR := stripX - panelGap
	first, last := c.rounds()
	x := func(r int) float64 {
		if first == last {
			return (roundsLeft + roundsR) / 2
		}
		return roundsLeft + 10 + float64(r-first)/float64(last-first)*(roundsR-roundsLeft-20)
	}
	c.roundAxis(&body, first, last, x, bottom)
	for j, s := range c.Cell.Series {
		dodge := (float64(j) - float64(k-1)/2) * 3
		c.series(&body, s, func(r int) float64 { return x(r) + dodge }, y, bottom)
		c.strip(&body, s, stripX+stripW/float64(k)*(float64(j)+0.5), stripW/float64(k), y, bottom)
	}
	height := bottom + roundsBottom
	var out strings.Builder
	fmt.Fprintf(&out, `<svg xmlns="http://www.w3.org/2000/svg" class="chart rounds" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" role="img" font-family="%s" font-size="%.0f">`+"\n",
		chartWidth, height, chartWidth, height, svgText(chartFonts), chartFont)
	fmt.Fprintf(&out, "<title>%s</title>\n", svgText(c.Cell.Path+" "+c.Cell.Workload+" "+c.Cell.Metric+" by round"))
	step := ticks[1] - ticks[0]
	for _, t := range ticks {
		fmt.Fprintf(&out, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", roundsLeft, y(t), chartWidth-chartPad, y(t), gridColour)
		fmt.Fprintf(&out, `<text x="%.1f" y="%.1f" text-anchor="end" font-size="%.0f" fill="%s">%s</text>`+"\n",
			roundsLeft-6, y(t)+4, chartSmall, mutedColour, svgText(tickLabel(t, step)))
	}
	fmt.Fprintf(&out, `<text x="%.1f" y="%.1f" font-size="%.0f" fill="%s">%s</text>`+"\n", chartPad, top-10, chartSmall, inkColour, svgText(c.Cell.Unit))
	out.WriteString(body.String())
	out.WriteString("</svg>")
	return out.String()
}

// roundAxis numbers the rounds under the rounds panel, a label every few rounds where they
// would crowd, and names both panels.
func (c roundsChart) roundAxis(w *strings.Builder, first, last int, x func(int) float64, bottom float64) {
	every := 1
	for every < 100 && (last-first)/every > 14 {
		every *= 2
	}
	for r := first; r <= last; r += every {
		fmt.Fprintf(w, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="%.0f" fill="%s">%d</text>`+"\n", x(r), bottom+14, chartSmall, mutedColour, r)
	}
	fmt.Fprintf(w, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="%.0f" fill="%s">round</text>`+"\n",
		(x(first)+x(last))/2, bottom+32, chartSmall, inkColour)
}

// series draws a target's samples in round order, joined, its mean dashed behind them, its
// outliers ringed and its failed samples crossed at the foot of the panel.
func (c roundsChart) series(w *strings.Builder, s analysis.TargetRounds, x func(int) float64, y func(float64) float64, bottom float64) {
	idx := c.Marker[s.Target]
	colour := c.Colour
	dash := ""
	if idx%2 == 1 {
		dash = ` stroke-dasharray="4 2"`
	}
	if !math.IsNaN(s.Summary.Mean) && len(s.Points) > 0 {
		fmt.Fprintf(w, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-dasharray="2 3" opacity="0.7"/>`+"\n",
			x(s.Points[0].Round), y(s.Summary.Mean), x(s.Points[len(s.Points)-1].Round), y(s.Summary.Mean), colour)
	}
	if len(s.Points) > 1 {
		var pts strings.Builder
		for _, p := range s.Points {
			fmt.Fprintf(&pts, "%.1f,%.1f ", x(p.Round), y(p.Value))
		}
		fmt.Fprintf(w, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.3"%s/>`+"\n", strings.TrimSpace(pts.String()), colour, dash)
	}
	label := c.label(s.Target)
	for _, p := range s.Points {
		if p.Outlier {
			ring(w, x(p.Round), y(p.Value))
		}
	}
	// One group paints every marker of the series, which keeps the page small.
	fmt.Fprintf(w, "<g %s>\n", markerPaint(idx, colour))
	for _, p := range s.Points {
		tip := fmt.Sprintf("%s round %d: %s %s", label, p.Round, analysis.Num(p.Value), c.Cell.Unit)
		if p.Outlier {
			tip += " (outlier)"
		}
		marker(w, idx, x(p.Round), y(p.Value), "", tip)
	}
	w.WriteString("</g>\n")
	for _, f := range s.Failed {
		cross(w, x(f.Round), bottom-6, fmt.Sprintf("%s round %d failed: %s", label, f.Round, cut(f.Error, 200)))
	}
}

// strip draws a target's samples as dots in a column centred on cx, spread sideways where
// they are close, with their mean as a bar and its 95 % interval as a whisker beside them, and
// the target's name under the column.
func (c roundsChart) strip(w *strings.Builder, s analysis.TargetRounds, cx, colW float64, y func(float64) float64, bottom float64) {
	idx := c.Marker[s.Target]
	dots := cx - 8
	fmt.Fprintf(w, `<g fill="%s" opacity="0.75">`, c.Colour)
	for i, p := range s.Points {
		fmt.Fprintf(w, `<circle cx="%.1f" cy="%.1f" r="2.6"/>`, dots+float64(i%3-1)*5, y(p.Value))
	}
	w.WriteString("</g>\n")
	for i, p := range s.Points {
		if p.Outlier {
			ring(w, dots+float64(i%3-1)*5, y(p.Value))
		}
	}
	bar := cx + 12
	sm := s.Summary
	tip := fmt.Sprintf("%s: mean %s %s, 95 %% CI %s, n=%d", c.label(s.Target), analysis.Num(sm.Mean), c.Cell.Unit, ciOf(sm), sm.N)
	if !math.IsNaN(sm.CILow) && !math.IsNaN(sm.CIHigh) && !math.IsInf(sm.CILow, 0) && !math.IsInf(sm.CIHigh, 0) {
		fmt.Fprintf(w, `<path d="M%.1f %.1fV%.1fM%.1f %.1fh8M%.1f %.1fh8" stroke="%s" stroke-width="1.5" fill="none"/>`+"\n",
			bar, y(sm.CILow), y(sm.CIHigh), bar-4, y(sm.CILow), bar-4, y(sm.CIHigh), inkColour)
	}
	if !math.IsNaN(sm.Mean) {
		fmt.Fprintf(w, `<rect x="%.1f" y="%.1f" width="14" height="2.5" fill="%s"><title>%s</title></rect>`+"\n", bar-7, y(sm.Mean)-1.25, inkColour, svgText(tip))
	}
	// The target's marker and name, centred under its column.
	name := cut(c.label(s.Target), max(int((colW-14)/(chartSmall*charWidth)), 3))
	left := cx - (10+textWidth(name, chartSmall))/2
	marker(w, idx, left+markerR, bottom+12, markerPaint(idx, c.Colour), "")
	fmt.Fprintf(w, `<text x="%.1f" y="%.1f" font-size="%.0f" fill="%s"><title>%s</title>%s</text>`+"\n",
		left+10, bottom+16, chartSmall, inkColour, svgText(c.label(s.Target)), svgText(name))
}

// label is a target's name as the page labels it.
func (c roundsChart) label(target string) string {
	if l, ok := c.Label[target]; ok {
		return l
	}
	return target
}

// legend names the targets by their markers and explains the rings, crosses and whisker,
// flowing onto more lines when they do not fit; it returns the y below it, where the plot
// starts.
func (c roundsChart) legend(w *strings.Builder, y float64) float64 {
	type entry struct {
		text string
		draw func(x, y float64) // draws the glyph left of the text
	}
	var entries []entry
	for _, s := range c.Cell.Series {
		idx, label := c.Marker[s.Target], c.label(s.Target)
		entries = append(entries, entry{cut(label, maxLabelRune), func(x, y float64) { marker(w, idx, x+5, y+6, markerPaint(idx, c.Colour), label) }})
	}
	if c.any(func(s analysis.TargetRounds) bool { return len(s.Summary.Outliers) > 0 }) {
		entries = append(entries, entry{"outlier", func(x, y float64) { ring(w, x+5, y+6) }})
	}
	if c.any(func(s analysis.TargetRounds) bool { return len(s.Failed) > 0 }) {
		entries = append(entries, entry{"failed", func(x, y float64) { cross(w, x+5, y+6, "") }})
	}
	entries = append(entries, entry{"mean and 95 % CI", func(x, y float64) {
		fmt.Fprintf(w, `<path d="M%.1f %.1fh8M%.1f %.1fv8M%.1f %.1fh8" stroke="%s" stroke-width="1.5" fill="none"/>`+"\n",
			x+1, y+2, x+5, y+2, x+1, y+10, inkColour)
		fmt.Fprintf(w, `<rect x="%.1f" y="%.1f" width="12" height="2.5" fill="%s"/>`+"\n", x+11, y+4.75, inkColour)
	}})
	x := chartPad
	for _, e := range entries {
		glyph := 13.0
		if e.text == "mean and 95 % CI" {
			glyph = 28
		}
		wd := glyph + textWidth(e.text, chartSmall) + 14
		if x+wd > chartWidth-chartPad && x > chartPad {
			x, y = chartPad, y+legendRowH
		}
		e.draw(x, y)
		fmt.Fprintf(w, `<text x="%.1f" y="%.1f" font-size="%.0f" fill="%s">%s</text>`+"\n", x+glyph, y+10, chartSmall, inkColour, svgText(e.text))
		x += wd
	}
	return y + legendRowH + 18
}

// any says whether some series of the cell has p.
func (c roundsChart) any(p func(analysis.TargetRounds) bool) bool {
	for _, s := range c.Cell.Series {
		if p(s) {
			return true
		}
	}
	return false
}

// cross marks a failed sample at (cx, cy), tip saying why where given.
func cross(w *strings.Builder, cx, cy float64, tip string) {
	title := ""
	if tip != "" {
		title = "<title>" + svgText(tip) + "</title>"
	}
	fmt.Fprintf(w, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2">%s</polyline>`+"\n",
		pointList(cx-4, cy-4, cx+4, cy+4, cx, cy, cx+4, cy-4, cx-4, cy+4), worseColour, title)
}

// ring circles an outlier.
func ring(w *strings.Builder, cx, cy float64) {
	fmt.Fprintf(w, `<circle cx="%.1f" cy="%.1f" r="6" fill="none" stroke="%s" stroke-width="1.2"/>`+"\n", cx, cy, inkColour)
}

// markerPaint is the fill and stroke of the marker of the target with index idx: filled or
// hollow in the path's colour.
func markerPaint(idx int, colour string) string {
	if (idx+idx/4)%2 == 1 {
		return fmt.Sprintf(`fill="#fff" stroke="%s" stroke-width="1.4"`, colour)
	}
	return fmt.Sprintf(`fill="%s"`, colour)
}

// marker draws the marker of the target with index idx at (cx, cy): a circle, square, diamond
// or triangle, filled or hollow (markerPaint, in paint, or "" inside a group that sets it), so
// that up to eight targets differ within one path's colour.
func marker(w *strings.Builder, idx int, cx, cy float64, paint, tip string) {
	if paint != "" {
		paint = " " + paint
	}
	title := ""
	if tip != "" {
		title = "<title>" + svgText(tip) + "</title>"
	}
	r := markerR
	switch idx % 4 {
	case 0:
		fmt.Fprintf(w, `<circle cx="%.1f" cy="%.1f" r="%.1f"%s>%s</circle>`+"\n", cx, cy, r, paint, title)
	case 1:
		fmt.Fprintf(w, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f"%s>%s</rect>`+"\n", cx-r, cy-r, 2*r, 2*r, paint, title)
	case 2:
		d := r * 1.35
		fmt.Fprintf(w, `<polygon points="%s"%s>%s</polygon>`+"\n", pointList(cx, cy-d, cx+d, cy, cx, cy+d, cx-d, cy), paint, title)
	default:
		d := r * 1.3
		fmt.Fprintf(w, `<polygon points="%s"%s>%s</polygon>`+"\n", pointList(cx, cy-d, cx+d, cy+d*0.8, cx-d, cy+d*0.8), paint, title)
	}
}

// pointList formats coordinates pairwise for a polygon or polyline.
func pointList(xy ...float64) string {
	parts := make([]string, 0, len(xy)/2)
	for i := 0; i+1 < len(xy); i += 2 {
		parts = append(parts, strconv.FormatFloat(xy[i], 'f', 1, 64)+","+strconv.FormatFloat(xy[i+1], 'f', 1, 64))
	}
	return strings.Join(parts, " ")
}
