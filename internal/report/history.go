package report

import (
	"fmt"
	"html/template"
	"math"
	"strings"

	"github.com/cnibench/cnibench/internal/history"
)

// Geometry of a history chart: the runs left to right, the metric up.
const (
	historyHeight = 170.0
	historyLeft   = 62.0
	historyTop    = 12.0
	historyBottom = 30.0
	worseColour   = "#cf222e"
	betterColour  = "#1a7f37"
)

// htmlHistory is one series' chart in the page.
type htmlHistory struct {
	Title, Line string
	SVG         template.HTML
}

// htmlHistories draws the series of a run's cells over the stored runs, those with at least
// two runs, with run the run the report is of (its point is ringed).
func htmlHistories(prefix string, series []history.Series, run string) []htmlHistory {
	var out []htmlHistory
	for _, s := range series {
		if len(s.Points) < 2 {
			continue
		}
		title := fmt.Sprintf("%s%s %s %s %s", prefix, s.Target, s.Path, s.Workload, s.Metric)
		line := fmt.Sprintf("%d runs, %s to %s", len(s.Points), s.Points[0].Started.UTC().Format("2006-01-02"),
			s.Points[len(s.Points)-1].Started.UTC().Format("2006-01-02"))
		for _, st := range s.Steps {
			line += fmt.Sprintf("; %s at run %s: %.4g → %.4g", s.Kind(st), st.Run, st.Before, st.After)
			if !math.IsNaN(st.RatioLow) {
				line += fmt.Sprintf(" (x%.3f [%.3f, %.3f])", st.Ratio, st.RatioLow, st.RatioHigh)
			}
		}
		if len(s.Steps) == 0 {
			line += "; no change point"
		}
		out = append(out, htmlHistory{Title: title, Line: line, SVG: template.HTML(historySVG(s, run))}) //nolint:gosec // built from escaped text
	}
	return out
}

// historySVG draws a series: one dot per run, joined, the report's run ringed, each change
// point a dashed line before the first run of its new level (red for the worse, green for the
// better), and each segment's mean as a horizontal line.
func historySVG(s history.Series, run string) string {
	lo, hi := s.Points[0].Mean, s.Points[0].Mean
	for _, p := range s.Points {
		lo, hi = math.Min(lo, p.Mean), math.Max(hi, p.Mean)
	}
	ticks := niceTicks(math.Min(lo, 0), hi, 4)
	if len(ticks) < 2 {
		ticks = []float64{lo, hi + 1}
	}
	ylo, yhi := ticks[0], ticks[len(ticks)-1]
	plotW := chartWidth - historyLeft - chartPad
	plotBottom := historyHeight - historyBottom
	x := func(i int) float64 {
		if len(s.Points) == 1 {
			return historyLeft + plotW/2
		}
		return historyLeft + plotW*float64(i)/float64(len(s.Points)-1)
	}
	y := func(v float64) float64 { return plotBottom - (v-ylo)/(yhi-ylo)*(plotBottom-historyTop) }
	var w strings.Builder
	fmt.Fprintf(&w, `<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" role="img" font-family="%s" font-size="%.0f">`+"\n",
		chartWidth, historyHeight, chartWidth, historyHeight, svgText(chartFonts), chartFont)
	fmt.Fprintf(&w, "<title>%s</title>\n", svgText(s.Target+" "+s.Path+" "+s.Workload+" "+s.Metric))
	step := ticks[1] - ticks[0]
	for _, t := range ticks {
		fmt.Fprintf(&w, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", historyLeft, y(t), historyLeft+plotW, y(t), gridColour)
		fmt.Fprintf(&w, `<text x="%.1f" y="%.1f" text-anchor="end" font-size="%.0f" fill="%s">%s</text>`+"\n",
			historyLeft-6, y(t)+4, chartSmall, mutedColour, svgText(tickLabel(t, step)))
	}
	fmt.Fprintf(&w, `<text x="%.1f" y="%.1f" font-size="%.0f" fill="%s">%s, run by run (oldest left)</text>`+"\n",
		historyLeft, historyHeight-8, chartSmall, inkColour, svgText(s.Unit))
	segments(&w, s, x, y)
	var path strings.Builder
	for i, p := range s.Points {
		cmd := "L"
		if i == 0 {
			cmd = "M"
		}
		fmt.Fprintf(&path, "%s%.1f %.1f ", cmd, x(i), y(p.Mean))
	}
	fmt.Fprintf(&w, `<path d="%s" fill="none" stroke="%s" stroke-width="1.2"/>`+"\n", strings.TrimSpace(path.String()), mutedColour)
	for i, p := range s.Points {
		fmt.Fprintf(&w, `<circle cx="%.1f" cy="%.1f" r="2.6" fill="%s"><title>%s: %.4g %s (n=%d)</title></circle>`+"\n",
			x(i), y(p.Mean), inkColour, svgText(p.Run), p.Mean, svgText(s.Unit), p.N)
		if p.Run == run {
			fmt.Fprintf(&w, `<circle cx="%.1f" cy="%.1f" r="6" fill="none" stroke="%s" stroke-width="1.5"/>`+"\n", x(i), y(p.Mean), inkColour)
		}
	}
	w.WriteString("</svg>\n")
	return w.String()
}

// segments draws each segment's mean and the change points between them.
func segments(w *strings.Builder, s history.Series, x func(int) float64, y func(float64) float64) {
	start := 0
	level := func(from, to int) float64 {
		sum := 0.0
		for _, p := range s.Points[from:to] {
			sum += p.Mean
		}
		return sum / float64(to-from)
	}
	bounds := make([]int, 0, len(s.Steps)+1)
	for _, st := range s.Steps {
		bounds = append(bounds, st.Index)
	}
	bounds = append(bounds, len(s.Points))
	for _, end := range bounds {
		if end > start {
			m := level(start, end)
			fmt.Fprintf(w, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2" opacity="0.5"/>`+"\n",
				x(start), y(m), x(end-1), y(m), inkColour)
		}
		start = end
	}
	for _, st := range s.Steps {
		colour := mutedColour
		switch {
		case st.Worse:
			colour = worseColour
		case s.Direction != "":
			colour = betterColour
		}
		cx := (x(st.Index-1) + x(st.Index)) / 2
		fmt.Fprintf(w, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="1.5" stroke-dasharray="5 3"><title>change point at run %s</title></line>`+"\n",
			cx, historyTop, cx, historyHeight-historyBottom, colour, svgText(st.Run))
	}
}
