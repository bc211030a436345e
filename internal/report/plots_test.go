package report

import (
	"fmt"
	"github.com/cnibench/cnibench/internal/testsupport/aarun"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/analysis"
	"github.com/cnibench/cnibench/internal/suite"
)

// aaDocument is the real run's document, as `cnibench report` builds it.
func aaDocument(t *testing.T) Document {
	t.Helper()
	b := aarun.Load(t)
	return NewDocument(b.Run, b.Targets, b.Samples)
}

// plotFragments returns the <svg> elements of a page whose class is chart and kind.
func plotFragments(page, kind string) []string {
	return regexp.MustCompile(`(?s)<svg [^>]*class="chart `+kind+`".*?</svg>`).FindAllString(page, -1)
}

// withoutPlots removes the figures of the rounds and forest plots from a page: the page as
// it was before them.
func withoutPlots(page string) string {
	parts := strings.Split(page, "<figure>")
	var b strings.Builder
	b.WriteString(parts[0])
	for _, p := range parts[1:] {
		end := strings.Index(p, "</figure>")
		if end >= 0 && (strings.Contains(p[:end], `class="chart rounds"`) || strings.Contains(p[:end], `class="chart forest"`)) {
			b.WriteString(p[end+len("</figure>"):])
			continue
		}
		b.WriteString("<figure>" + p)
	}
	return b.String()
}

// TestPlotsWellFormed draws the plots of a synthetic run with a failed sample: one rounds
// chart per cell, the verdict's forest plots (ratios, and loss on the difference scale), each
// well-formed XML with no NaN, the failed sample crossed in its cell's chart.
func TestPlotsWellFormed(t *testing.T) {
	paths := []string{suite.HostNetwork, suite.SameNode, suite.CrossNode}
	d := synthDocument("r1", []string{"kind-flannel", "kind-cilium", "kind-bridge"}, paths, 5, 21)
	page := writeHTML(t, d)
	rounds, forests := plotFragments(page, "rounds"), plotFragments(page, "forest")
	if want := len(paths) * len(synthWorkloads()); len(rounds) != want || len(d.Rounds) != want {
		t.Errorf("%d rounds charts (%d cells), want one per cell: %d", len(rounds), len(d.Rounds), want)
	}
	if len(forests) != 2 {
		t.Errorf("%d forest plots, want 2 (ratios, and loss as differences)", len(forests))
	}
	crossed := 0
	for i, s := range append(rounds, forests...) {
		checkXML(t, fmt.Sprintf("plot %d", i), s)
		for _, bad := range []string{"NaN", "Inf"} {
			if strings.Contains(s, bad) {
				t.Errorf("plot %d has %s:\n%s", i, bad, s)
			}
		}
		if strings.Contains(s, "round 1 failed: iperf3: connection refused") {
			crossed++
			if !strings.Contains(s, "cross-node tcp-stream/1") {
				t.Errorf("the failed sample is crossed in another cell's chart:\n%s", s)
			}
		}
	}
	if crossed != 1 {
		t.Errorf("the failed sample is crossed in %d charts, want 1", crossed)
	}
	// Each forest row is one comparison: two per verdict line of three targets.
	rows := 0
	for _, s := range forests {
		rows += strings.Count(s, `width="7" height="7"`) - 3 // less the legend's three swatches
	}
	if want := 2 * len(d.Verdict); rows != want {
		t.Errorf("%d forest rows, want %d", rows, want)
	}
}

// TestForestFigures checks what a forest row prints against the entry the verdict table
// prints, and that a ratio's point sits where its value is on the log axis.
func TestForestFigures(t *testing.T) {
	rows := []analysis.ForestRow{
		{Workload: "tcp-stream/1", Path: "same-node", Metric: "throughput_gbps", Name: "b", Against: "a", Estimate: 0.5, Low: 0.4, High: 0.625, Verdict: "worse"},
		{Workload: "tcp-stream/1", Path: "cross-node", Metric: "throughput_gbps", Name: "b", Against: "a", Estimate: 2, Low: math.NaN(), High: math.NaN(), Verdict: "untested"},
	}
	c := forestChart{Title: "t", Unit: "ratio", Rows: rows, Colours: newPathColours(nil)}
	svg := c.SVG()
	checkXML(t, "forest", svg)
	if got := forestFigures(rows[0]); got != "x0.5 [0.4, 0.625]" {
		t.Errorf("figures %q", got)
	}
	ticks, lo, hi := c.axisTicks(300)
	if !(lo < 0.4 && hi > 2) || len(ticks) < 3 {
		t.Fatalf("axis [%v, %v] ticks %v, want it to hold 0.4 to 2", lo, hi, ticks)
	}
	x := logX(lo, hi, 0, 300)
	// 0.5 and 2 are as far from 1 on a log axis.
	if d := (x(1) - x(0.5)) - (x(2) - x(1)); math.Abs(d) > 1e-9 {
		t.Errorf("log axis: 0.5 is %v px nearer 1 than 2 is", d)
	}
	for colour, row := range map[string]string{worseColour: "same-node: b vs a", nsColour: "cross-node: b vs a"} {
		if !strings.Contains(svg, `fill="`+colour+`"><title>tcp-stream/1 throughput_gbps `+row) {
			t.Errorf("the point of %s is not drawn in %s", row, colour)
		}
	}
	if strings.Count(svg, "<path ") != 2 { // the legend's whisker and the first row's interval
		t.Errorf("%d whiskers, want 2: none for the row without an interval", strings.Count(svg, "<path "))
	}
	loss := forestChart{Title: "t", Unit: "pp", Rows: []analysis.ForestRow{{Points: true, Estimate: 1.9, Low: 1.7, High: 2.1, Verdict: "worse"}}}
	if got := forestFigures(loss.Rows[0]); got != "+1.9 [1.7, 2.1]" {
		t.Errorf("loss figures %q", got)
	}
	checkXML(t, "loss forest", loss.SVG())
}

// TestPlotsLayoutNoOverlap draws the plots of a busy run (five paths, four targets, long
// names) and checks that no text touches other text or a marker, and that all lies inside
// each chart.
func TestPlotsLayoutNoOverlap(t *testing.T) {
	d := synthDocument("r", []string{"kind-flannel-vxlan-ipvs-long-name", "kind-cilium", "b", "kind-calico"}, suite.AllPaths(), 7, 12)
	page := writeHTML(t, d)
	plots := append(plotFragments(page, "rounds"), plotFragments(page, "forest")...)
	if len(plots) == 0 {
		t.Fatal("no plots")
	}
	for i, svg := range plots {
		checkLayout(t, fmt.Sprintf("plot %d", i), svg)
	}
}

// checkLayout fails where a text of the chart svg overlaps another text or a rectangle, or
// where something leaves the chart's viewBox.
func checkLayout(t *testing.T, what, svg string) {
	t.Helper()
	boxes := svgBoxes(t, svg)
	head := svg[:strings.Index(svg, ">")]
	i := strings.Index(head, `viewBox="`) + len(`viewBox="`)
	var vb [4]float64
	for k, f := range strings.Fields(head[i : i+strings.Index(head[i:], `"`)]) {
		vb[k], _ = strconv.ParseFloat(f, 64)
	}
	for a := range boxes {
		ba := boxes[a]
		if ba.x0 < -0.5 || ba.y0 < -0.5 || ba.x1 > vb[2]+0.5 || ba.y1 > vb[3]+0.5 {
			t.Errorf("%s: %s %q at [%.0f,%.0f]-[%.0f,%.0f] leaves the %gx%g chart", what, ba.what, ba.text, ba.x0, ba.y0, ba.x1, ba.y1, vb[2], vb[3])
		}
		for b := a + 1; b < len(boxes); b++ {
			bb := boxes[b]
			if (ba.what == "text" || bb.what == "text") && ba.overlaps(bb) {
				t.Errorf("%s: %s %q overlaps %s %q", what, ba.what, ba.text, bb.what, bb.text)
			}
		}
	}
}

// TestPlotsSizeDefaultSuite draws the real run of the default suite and checks that its plots
// (20 rounds charts, the verdict's two forest plots) grow the page by at most half.
func TestPlotsSizeDefaultSuite(t *testing.T) {
	d := aaDocument(t)
	page := writeHTML(t, d)
	before := len(withoutPlots(page))
	rounds, forests := plotFragments(page, "rounds"), plotFragments(page, "forest")
	t.Logf("report of the default suite's run: %d bytes without the plots, %d with them (+%.0f %%); %d rounds charts, %d forest plots",
		before, len(page), 100*float64(len(page)-before)/float64(before), len(rounds), len(forests))
	if len(rounds) != 20 || len(forests) != 2 {
		t.Errorf("%d rounds charts and %d forest plots, want 20 (one per cell) and 2 (ratios, loss)", len(rounds), len(forests))
	}
	if float64(len(page)) > 1.5*float64(before) {
		t.Errorf("the plots grow the report from %d to %d bytes, more than half", before, len(page))
	}
	for i, s := range append(rounds, forests...) {
		checkXML(t, fmt.Sprintf("plot %d", i), s)
		checkLayout(t, fmt.Sprintf("plot %d", i), s)
	}
}
