package report

import (
	"fmt"
	"html"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/internal/analysis"
	"github.com/cnibench/cnibench/internal/suite"
)

// Chart geometry in SVG user units, which are CSS pixels when a chart is shown at its natural
// width. Charts are horizontal bar charts: one row per path, so that labels never collide
// however many paths and targets there are, and long path or target names still fit.
const (
	chartWidth   = 600.0
	chartPad     = 8.0
	chartFont    = 12.0
	chartSmall   = 11.0
	barHeight    = 16.0
	subBarHeight = 11.0
	subBarGap    = 2.0
	rowGap       = 7.0
	groupHeadH   = 20.0
	legendRowH   = 18.0
	axisHeight   = 40.0
	maxLabelRune = 28 // longer row labels are cut (the full text is in the tooltip)
	// charWidth over-estimates the advance of an average character of the sans-serif fonts a
	// browser falls back to (DejaVu Sans, Arial, Helvetica are 0.50-0.64 em), so text that is
	// measured with it never runs into its neighbour.
	charWidth = 0.62
)

// Colours and fonts of the chart furniture (axis, text, whiskers).
const (
	inkColour   = "#1f2328"
	mutedColour = "#59636e"
	gridColour  = "#e1e4e8"
	chartFonts  = "system-ui, -apple-system, 'Segoe UI', Roboto, 'DejaVu Sans', Arial, sans-serif"
)

// knownPathColours gives each path of the suite a fixed colour, the same in every chart and
// every report, so that readers learn them. They are Tableau 10 hues: distinct for common
// colour-vision deficiencies and, being saturated, easy to find in a screenshot test.
func knownPathColours() map[string]string {
	out := map[string]string{}
	for _, p := range suite.PathTable() {
		if p.Colour != "" {
			out[p.Name] = p.Colour
		}
	}
	return out
}

// extraColours are handed out, in order, to paths the suite does not know (a newer store).
func extraColours() []string {
	return []string{"#edc948", "#76b7b2", "#ff9da7", "#9c755f", "#bab0ac"}
}

// pathColours maps each path of a report to its fill colour.
type pathColours map[string]string

// newPathColours assigns colours to paths: known paths keep their fixed colour, the others
// get the extra colours in name order (cycling when there are more than five).
func newPathColours(paths []string) pathColours {
	known := knownPathColours()
	c := pathColours{}
	var unknown []string
	for _, p := range paths {
		if col, ok := known[p]; ok {
			c[p] = col
		} else if _, seen := c[p]; !seen {
			unknown = append(unknown, p)
			c[p] = ""
		}
	}
	sort.Strings(unknown)
	extra := extraColours()
	for i, p := range unknown {
		c[p] = extra[i%len(extra)]
	}
	return c
}

// of is the colour of a path, grey for one that was not registered.
func (c pathColours) of(path string) string {
	if col := c[path]; col != "" {
		return col
	}
	return "#8c8c8c"
}

// chartBar is one measured value drawn as a bar, with its 95 % CI as a whisker.
type chartBar struct {
	Name      string  // printed before the value to tell sub-bars apart, e.g. "p99"; may be empty
	Value     float64 // the mean
	Low, High float64 // bounds of the CI; NaN (n < 2) draws no whisker
	Shade     float64 // 0 draws the path colour; towards 1 mixes it with white
	Note      string  // printed after the value, e.g. "0.62× host"
	Tooltip   string  // shown on hover
}

// chartRow is one path of one target: one bar, or several (the latency percentiles).
type chartRow struct {
	Group string // target label; rows of a group follow each other under one heading
	Path  string
	N     int
	Bars  []chartBar
}

// legendShade is a legend entry for the sub-bars of a row, e.g. p50 drawn at Shade 0.
type legendShade struct {
	Name  string
	Shade float64
}

// barChart is a horizontal bar chart of means with CI whiskers, rows grouped by target.
type barChart struct {
	Title   string // accessible name of the chart
	Unit    string // axis unit
	Rows    []chartRow
	Colours pathColours
	Shades  []legendShade
}

// svgText escapes s for SVG text and attribute values. html.EscapeString's output is also
// well-formed XML (&#39; and &#34; are numeric references), so the same function serves both.
func svgText(s string) string { return html.EscapeString(s) }

// textWidth estimates the rendered width of s at the given font size.
func textWidth(s string, size float64) float64 {
	return float64(len([]rune(s))) * size * charWidth
}

// cut shortens s to at most n runes, marking the cut with an ellipsis.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// rowLabel is the text left of a row: the path, and the sample count in a lighter colour.
func rowLabel(r chartRow) (path, count string) {
	return cut(r.Path, maxLabelRune), fmt.Sprintf(" n=%d", r.N)
}

// valueLabel is the text right of a bar.
func valueLabel(b chartBar) string {
	s := analysis.Num(b.Value)
	if b.Name != "" {
		s = b.Name + " " + s
	}
	if b.Note != "" {
		s += " · " + b.Note
	}
	return s
}

// SVG renders the chart as a standalone <svg> element.
func (c barChart) SVG() string {
	lo, hi := c.domain()
	ticks := niceTicks(lo, hi, 6)
	lo, hi = ticks[0], ticks[len(ticks)-1]

	labelW, valueW := 60.0, 40.0
	for _, r := range c.Rows {
		p, n := rowLabel(r)
		labelW = math.Max(labelW, textWidth(p, chartFont)+textWidth(n, chartSmall)+8)
		for _, b := range r.Bars {
			valueW = math.Max(valueW, textWidth(valueLabel(b), chartSmall)+10)
		}
	}
	x0 := chartPad + labelW
	x1 := chartWidth - chartPad - valueW
	if x1-x0 < 160 { // very long labels: give the bars room and let the value text overflow
		x1 = x0 + 160
	}
	x := func(v float64) float64 { return x0 + (v-lo)/(hi-lo)*(x1-x0) }

	var body strings.Builder
	y := chartPad
	y = c.legend(&body, y)
	plotTop := y
	y += 4
	multi := c.groups() > 1
	prev := "\x00"
	for _, r := range c.Rows {
		if multi && r.Group != prev {
			y += 2
			fmt.Fprintf(&body, `<text x="%.1f" y="%.1f" font-weight="600" fill="%s">%s</text>`+"\n",
				chartPad, y+13, inkColour, svgText(cut(r.Group, 80)))
			y += groupHeadH
		}
		prev = r.Group
		y = c.row(&body, r, y, x, lo)
	}
	plotBottom := y
	height := plotBottom + axisHeight

	var out strings.Builder
	fmt.Fprintf(&out, `<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" role="img" font-family="%s" font-size="%.0f">`+"\n",
		chartWidth, height, chartWidth, height, svgText(chartFonts), chartFont)
	fmt.Fprintf(&out, "<title>%s</title>\n", svgText(c.Title))
	// Grid lines go first so that bars and text are drawn over them.
	for _, t := range ticks {
		fmt.Fprintf(&out, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", x(t), plotTop, x(t), plotBottom, gridColour)
	}
	out.WriteString(body.String())
	axis(&out, ticks, x, plotBottom, c.Unit)
	out.WriteString("</svg>")
	return out.String()
}

// domain is the range of values the axis must show: zero, every mean and every CI bound.
func (c barChart) domain() (lo, hi float64) {
	for _, r := range c.Rows {
		for _, b := range r.Bars {
			for _, v := range []float64{b.Value, b.High} {
				if !math.IsNaN(v) && !math.IsInf(v, 0) {
					hi = math.Max(hi, v)
				}
			}
			// Only a negative mean extends the axis below zero: a CI reaching below zero for a
			// quantity that cannot be negative (n = 2, wide spread) is clipped instead.
			if !math.IsNaN(b.Value) && !math.IsInf(b.Value, 0) {
				lo = math.Min(lo, b.Value)
			}
		}
	}
	if hi == lo {
		hi = lo + 1
	}
	return lo, hi
}

// groups counts the distinct groups (targets) of the chart.
func (c barChart) groups() int {
	seen := map[string]bool{}
	for _, r := range c.Rows {
		seen[r.Group] = true
	}
	return len(seen)
}

// legend draws one swatch per path in the chart, the sub-bar shades and the whisker, flowing
// onto more lines when they do not fit; it returns the y below it.
func (c barChart) legend(w *strings.Builder, y float64) float64 {
	type entry struct {
		name, colour string
		whisker      bool
	}
	var entries []entry
	seen := map[string]bool{}
	for _, r := range c.Rows {
		if !seen[r.Path] {
			seen[r.Path] = true
			entries = append(entries, entry{name: r.Path, colour: c.Colours.of(r.Path)})
		}
	}
	for _, s := range c.Shades {
		entries = append(entries, entry{name: s.Name, colour: mix("#59636e", s.Shade)})
	}
	entries = append(entries, entry{name: "95 % CI of the mean", whisker: true})
	x := chartPad
	for i, e := range entries {
		wd := 16 + textWidth(e.name, chartSmall) + 14
		// The paths are one kind of entry, the shades and the whisker another: a new line
		// between them keeps "localhost p50" from reading as one label.
		newKind := i == len(entries)-len(c.Shades)-1 && len(c.Shades) > 0
		if (x+wd > chartWidth-chartPad || newKind) && x > chartPad {
			x, y = chartPad, y+legendRowH
		}
		if e.whisker {
			fmt.Fprintf(w, `<path d="M%.1f %.1fh12M%.1f %.1fv8M%.1f %.1fv8" stroke="%s" stroke-width="1.5" fill="none"/>`+"\n",
				x, y+6, x, y+2, x+12, y+2, inkColour)
		} else {
			fmt.Fprintf(w, `<rect x="%.1f" y="%.1f" width="11" height="11" fill="%s"/>`+"\n", x, y+0.5, e.colour)
		}
		fmt.Fprintf(w, `<text x="%.1f" y="%.1f" font-size="%.0f" fill="%s">%s</text>`+"\n", x+16, y+10, chartSmall, inkColour, svgText(e.name))
		x += wd
	}
	return y + legendRowH
}

// row draws one path of one target and returns the y below it.
func (c barChart) row(w *strings.Builder, r chartRow, y float64, x func(float64) float64, lo float64) float64 {
	h := barHeight
	if len(r.Bars) > 1 {
		h = subBarHeight
	}
	height := float64(len(r.Bars))*h + float64(len(r.Bars)-1)*subBarGap
	path, count := rowLabel(r)
	fmt.Fprintf(w, `<text x="%.1f" y="%.1f" text-anchor="end" fill="%s"><title>%s</title>%s<tspan font-size="%.0f" fill="%s">%s</tspan></text>`+"\n",
		x(lo)-8, y+height/2+4, inkColour, svgText(r.Group+" "+r.Path), svgText(path), chartSmall, mutedColour, svgText(count))
	base := x(math.Max(lo, 0))
	colour := c.Colours.of(r.Path)
	for i, b := range r.Bars {
		top := y + float64(i)*(h+subBarGap)
		mid := top + h/2
		if math.IsNaN(b.Value) || math.IsInf(b.Value, 0) {
			fmt.Fprintf(w, `<text x="%.1f" y="%.1f" font-size="%.0f" fill="%s">no data</text>`+"\n", base+4, mid+4, chartSmall, mutedColour)
			continue
		}
		left, right := math.Min(base, x(b.Value)), math.Max(base, x(b.Value))
		fmt.Fprintf(w, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s</title></rect>`+"\n",
			left, top, math.Max(right-left, 0.5), h, mix(colour, b.Shade), svgText(b.Tooltip))
		end := right
		if !math.IsNaN(b.Low) && !math.IsNaN(b.High) && !math.IsInf(b.Low, 0) && !math.IsInf(b.High, 0) {
			wl, wh := x(math.Max(b.Low, lo)), x(b.High)
			capH := h * 0.35
			fmt.Fprintf(w, `<path d="M%.1f %.1fH%.1f`, wl, mid, wh)
			if b.Low >= lo { // no cap where the whisker is clipped at the axis
				fmt.Fprintf(w, `M%.1f %.1fV%.1f`, wl, mid-capH, mid+capH)
			}
			fmt.Fprintf(w, `M%.1f %.1fV%.1f" stroke="%s" stroke-width="1.5" fill="none"/>`+"\n", wh, mid-capH, mid+capH, inkColour)
			end = math.Max(end, wh)
		}
		fmt.Fprintf(w, `<text x="%.1f" y="%.1f" font-size="%.0f" fill="%s">%s</text>`+"\n",
			end+5, mid+4, chartSmall, inkColour, svgText(valueLabel(b)))
	}
	return y + height + rowGap
}

// axis draws the value axis with its ticks, tick labels and unit below the plot.
func axis(w *strings.Builder, ticks []float64, x func(float64) float64, y float64, unit string) {
	step := 0.0
	if len(ticks) > 1 {
		step = ticks[1] - ticks[0]
	}
	labels := make([]string, len(ticks))
	for i, t := range ticks {
		labels[i] = tickLabel(t, step)
	}
	labelledAxis(w, ticks, labels, x, y, unit)
}

// labelledAxis draws a horizontal axis with its ticks, their labels and the unit below y.
func labelledAxis(w *strings.Builder, ticks []float64, labels []string, x func(float64) float64, y float64, unit string) {
	first, last := x(ticks[0]), x(ticks[len(ticks)-1])
	fmt.Fprintf(w, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", first, y, last, y, mutedColour)
	for i, t := range ticks {
		fmt.Fprintf(w, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", x(t), y, x(t), y+4, mutedColour)
		fmt.Fprintf(w, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="%.0f" fill="%s">%s</text>`+"\n",
			x(t), y+16, chartSmall, mutedColour, svgText(labels[i]))
	}
	fmt.Fprintf(w, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="%.0f" fill="%s">%s</text>`+"\n",
		(first+last)/2, y+33, chartSmall, inkColour, svgText(unit))
}

// niceTicks returns evenly spaced round values (1, 2 or 5 times a power of ten apart) that
// cover [lo, hi] with at most about maxTicks ticks; the first and last bound the axis.
func niceTicks(lo, hi float64, maxTicks int) []float64 {
	span := hi - lo
	if !(span > 0) || math.IsInf(span, 0) {
		return []float64{0, 1}
	}
	raw := span / float64(maxTicks-1)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	start := math.Floor(lo/step+1e-9) * step
	var ticks []float64
	for i := 0; ; i++ {
		t := start + float64(i)*step
		// Rounding to the step's precision keeps labels like 0.30000000000000004 away.
		t = math.Round(t/step*1e6) / 1e6 * step
		ticks = append(ticks, t)
		if t >= hi-1e-9*span || i > 100 {
			break
		}
	}
	if len(ticks) < 2 {
		ticks = append(ticks, start+step)
	}
	return ticks
}

// tickLabel prints a tick value compactly (40k rather than 40000) with the digits the step
// needs, so neighbouring labels stay short and never touch.
func tickLabel(v, step float64) string {
	a := math.Abs(v)
	switch {
	case v == 0:
		return "0"
	case a >= 1e6 && step >= 1e5:
		return trimFloat(v/1e6, step/1e6) + "M"
	case a >= 1e4 && step >= 1e3:
		return trimFloat(v/1e3, step/1e3) + "k"
	}
	return trimFloat(v, step)
}

// trimFloat formats v with as many decimals as step has.
func trimFloat(v, step float64) string {
	decimals := 0
	for s := step; decimals < 9 && math.Abs(s-math.Round(s)) > 1e-9*math.Max(1, math.Abs(s)); s *= 10 {
		decimals++
	}
	return strconv.FormatFloat(v, 'f', decimals, 64)
}

// mix blends a #rrggbb colour with white: 0 keeps the colour, 1 gives white.
func mix(colour string, white float64) string {
	if white <= 0 || len(colour) != 7 {
		return colour
	}
	v, err := strconv.ParseUint(colour[1:], 16, 32)
	if err != nil {
		return colour
	}
	ch := func(shift uint) uint64 {
		c := float64(v >> shift & 0xff)
		return uint64(math.Round(c + (255-c)*math.Min(white, 1)))
	}
	return fmt.Sprintf("#%02x%02x%02x", ch(16), ch(8), ch(0))
}
