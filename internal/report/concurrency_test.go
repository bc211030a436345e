package report

import (
	"encoding/xml"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/analysis"
	"github.com/cnibench/cnibench/internal/catalog"
	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/suite"
)

// concurrencyLevels are the pair counts of the concurrency test data.
func concurrencyLevels() []int { return []int{1, 10, 40} }

// concurrencyWorkloads are the workloads of the concurrency test data: a stream and a
// request/response one, whose rate metrics differ.
func concurrencyWorkloads() []string { return []string{"tcp-stream/1", "tcp-rr/64B"} }

// concurrencyDocument builds, through Summarize, a run of the concurrency workloads at every
// pair level on two paths: reps measured samples per cell plus a warm-up, the aggregate rate
// growing with N, and a fairness index below 1 for N > 1 (none for one pair, as the engine
// records it).
func concurrencyDocument(targets []string, reps int, seed uint64) Document {
	rng := rand.New(rand.NewPCG(seed, 11))
	start := time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)
	d := Document{Run: record.Run{ID: "20260314-092653-cc01", Started: start, Finished: start.Add(time.Hour), Status: record.StatusComplete}}
	paths := map[string]float64{suite.HostNetwork: 1, suite.CrossNode: 0.7}
	var samples []record.Sample
	seq := 0
	for _, t := range targets {
		d.Targets = append(d.Targets, record.Target{RunID: d.Run.ID, Name: t, Fingerprint: map[string]string{"cluster": t}})
		for _, p := range []string{suite.HostNetwork, suite.CrossNode} {
			for _, w := range concurrencyWorkloads() {
				for _, n := range concurrencyLevels() {
					for round := 0; round <= reps; round++ {
						m, r := synthMetrics(w, paths[p], rng)
						rate := engine.RateMetric(strings.SplitN(w, "/", 2)[0])
						m[rate] *= math.Sqrt(float64(n))
						if n > 1 {
							m[catalog.Fairness] = 1 - 0.3*rng.Float64()*float64(n)/40
						}
						seq++
						samples = append(samples, record.Sample{RunID: d.Run.ID, Seq: seq, Round: round, Warmup: round == 0,
							Target: t, Path: p, Workload: w, Pairs: n, Metrics: m, Resources: r})
					}
				}
			}
		}
	}
	d.Rows = analysis.Summarize(samples)
	return d
}

// svgElem is an element of a chart with its attributes and, for text, its content.
type svgElem struct {
	name  string
	attrs map[string]string
	text  string
}

// svgElems decodes a chart into its elements, in document order.
func svgElems(t *testing.T, s string) []svgElem {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(s))
	var out []svgElem
	var open []int // indexes into out of the elements being read
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("chart is not well-formed XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			e := svgElem{name: tok.Name.Local, attrs: map[string]string{}}
			for _, a := range tok.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			open = append(open, len(out))
			out = append(out, e)
		case xml.EndElement:
			open = open[:len(open)-1]
		case xml.CharData:
			if len(open) > 0 {
				out[open[len(open)-1]].text += string(tok)
			}
		}
	}
}

// ofClass returns the elements whose class is class.
func ofClass(elems []svgElem, class string) []svgElem {
	var out []svgElem
	for _, e := range elems {
		if e.attrs["class"] == class {
			out = append(out, e)
		}
	}
	return out
}

// points parses an SVG points attribute.
func points(t *testing.T, s string) [][2]float64 {
	t.Helper()
	var out [][2]float64
	for _, p := range strings.Fields(s) {
		xy := strings.Split(p, ",")
		x, errX := strconv.ParseFloat(xy[0], 64)
		y, errY := strconv.ParseFloat(xy[len(xy)-1], 64)
		if len(xy) != 2 || errX != nil || errY != nil {
			t.Fatalf("bad point %q in %q", p, s)
		}
		out = append(out, [2]float64{x, y})
	}
	return out
}

// yTicks returns the y axis labels of a line chart, bottom up, and the y of each.
func yTicks(t *testing.T, elems []svgElem) (labels []string, ys []float64) {
	t.Helper()
	for _, e := range ofClass(elems, "y-tick") {
		y, err := strconv.ParseFloat(e.attrs["y"], 64)
		if err != nil {
			t.Fatal(err)
		}
		labels = append(labels, e.text)
		ys = append(ys, y-4) // the label's baseline sits 4 below its grid line
	}
	return labels, ys
}

// tickValue reads a tick label back ("40k" is 40000, "1.5M" is 1500000).
func tickValue(t *testing.T, label string) float64 {
	t.Helper()
	scale := 1.0
	switch {
	case strings.HasSuffix(label, "k"):
		scale, label = 1e3, strings.TrimSuffix(label, "k")
	case strings.HasSuffix(label, "M"):
		scale, label = 1e6, strings.TrimSuffix(label, "M")
	}
	v, err := strconv.ParseFloat(label, 64)
	if err != nil {
		t.Fatalf("tick label %q: %v", label, err)
	}
	return v * scale
}

// concurrencyPart returns the concurrency section of a workload and its line charts.
func concurrencyPart(t *testing.T, page, workload string) (rate, fairness []svgElem) {
	t.Helper()
	i := strings.Index(page, `<section id="c-`+anchor(workload)+`" class="concurrency">`)
	if i < 0 {
		t.Fatalf("no concurrency part for %s", workload)
	}
	part := page[i:]
	part = part[:strings.Index(part, "</section>")]
	// It comes right before the workload's first section, the one with one pair.
	if !strings.HasPrefix(strings.TrimSpace(page[i+len(part)+len("</section>"):]), `<section id="w-`+anchor(workload)+`">`) {
		t.Errorf("%s: the concurrency part is not right before the workload's first section", workload)
	}
	if !strings.Contains(page, `<a href="#c-`+anchor(workload)+`">`+workload+`: concurrency</a>`) {
		t.Errorf("%s: no link to the concurrency part in the nav", workload)
	}
	svgs := svgFragments(part)
	if len(svgs) != 2 || strings.Count(part, `<svg xmlns="http://www.w3.org/2000/svg" class="chart line-chart"`) != 2 {
		t.Fatalf("%s: concurrency part has %d charts, want 2 line charts (rate, fairness)", workload, len(svgs))
	}
	return svgElems(t, svgs[0]), svgElems(t, svgs[1])
}

func TestWriteHTMLConcurrency(t *testing.T) {
	d := concurrencyDocument([]string{"kind"}, 4, 1)
	// A CI of a rate reaching below zero, and one of a fairness index above 1 (t-intervals of
	// few wide-spread samples do that), must be clipped to the axis.
	for i, r := range d.Rows {
		if r.Workload == "tcp-stream/1" && r.Path == suite.CrossNode && r.Pairs == 40 {
			switch r.Metric {
			case engine.MetricThroughput:
				d.Rows[i].Summary.CILow = -5
			case catalog.Fairness:
				d.Rows[i].Summary.CIHigh = 1.05
			}
		}
	}
	page := writeHTML(t, d)
	checkTagsBalanced(t, page)
	if got, want := strings.Count(page, `class="chart line-chart"`), 2*len(concurrencyWorkloads()); got != want {
		t.Errorf("page has %d line charts, want %d", got, want)
	}
	levels := concurrencyLevels()
	for _, w := range concurrencyWorkloads() {
		rate, fairness := concurrencyPart(t, page, w)
		for name, elems := range map[string][]svgElem{"rate": rate, "fairness": fairness} {
			lines, bands := ofClass(elems, "series"), ofClass(elems, "band")
			if len(lines) != 2 || len(bands) != 2 {
				t.Fatalf("%s %s chart: %d lines and %d bands, want one each per path (2)", w, name, len(lines), len(bands))
			}
			if got := len(ofClass(elems, "point")); got != 2*len(levels) {
				t.Errorf("%s %s chart: %d point markers, want %d", w, name, got, 2*len(levels))
			}
			var xTicks []string
			for _, e := range ofClass(elems, "x-tick") {
				xTicks = append(xTicks, e.text)
			}
			if got := strings.Join(xTicks, " "); got != "1 10 40" {
				t.Errorf("%s %s chart: pair axis %q, want 1 10 40", w, name, got)
			}
			labels, ys := yTicks(t, elems)
			top, bottom := ys[len(ys)-1], ys[0]
			if labels[0] != "0" {
				t.Errorf("%s %s chart: y axis starts at %s, want 0", w, name, labels[0])
			}
			for i, l := range lines {
				pts := points(t, l.attrs["points"])
				if len(pts) != len(levels) {
					t.Errorf("%s %s chart: line %d has %d points, want one per pair level (%d)", w, name, i, len(pts), len(levels))
				}
				if name == "fairness" && math.Abs(pts[0][1]-top) > 0.05 {
					t.Errorf("%s fairness: N=1 point at y=%.1f, want at 1 (y=%.1f)", w, pts[0][1], top)
				}
				if c := newPathColours([]string{suite.HostNetwork, suite.CrossNode}); l.attrs["stroke"] != c.of(suite.HostNetwork) && l.attrs["stroke"] != c.of(suite.CrossNode) {
					t.Errorf("%s %s chart: line colour %s is not a path colour", w, name, l.attrs["stroke"])
				}
			}
			for i, b := range bands {
				pts := points(t, b.attrs["points"])
				if len(pts) != 2*len(levels) {
					t.Errorf("%s %s chart: band %d has %d vertices, want %d", w, name, i, len(pts), 2*len(levels))
				}
				for _, p := range pts {
					if p[1] < top-0.05 || p[1] > bottom+0.05 {
						t.Errorf("%s %s chart: band %d reaches y=%.1f, outside the axis [%.1f, %.1f]", w, name, i, p[1], top, bottom)
					}
				}
				if name == "fairness" && (math.Abs(pts[0][1]-top) > 0.05 || math.Abs(pts[len(pts)-1][1]-top) > 0.05) {
					t.Errorf("%s fairness: band %d does not pinch to 1 at N=1: %v", w, i, pts)
				}
			}
			if name == "fairness" {
				if got := strings.Join(labels, " "); got != "0 0.2 0.4 0.6 0.8 1.0" {
					t.Errorf("%s fairness chart: y axis %q, want 0 to 1.0", w, got)
				}
				continue
			}
			// The rate axis covers every mean and upper CI bound.
			high := 0.0
			for _, r := range d.Rows {
				if r.Workload == w && r.Metric == engine.RateMetric(strings.SplitN(w, "/", 2)[0]) {
					high = math.Max(high, math.Max(r.Summary.Mean, r.Summary.CIHigh))
				}
			}
			if v := tickValue(t, labels[len(labels)-1]); v < high {
				t.Errorf("%s rate chart: y axis ends at %s, below the highest value %g", w, labels[len(labels)-1], high)
			}
		}
	}
	for i, s := range svgFragments(page) {
		if strings.Contains(s, "NaN") || strings.Contains(s, "Inf") {
			t.Errorf("chart %d has NaN or Inf:\n%s", i, s)
		}
	}
	if !strings.Contains(page, "(Gbit/s)") || !strings.Contains(page, "aggregate transactions_per_s") {
		t.Error("rate charts lack the unit or the tcp-rr rate metric")
	}
}

// TestWriteHTMLConcurrencyTargets checks that several targets get a line per target and path,
// told apart by dashes explained in the legend, and that their names are escaped.
func TestWriteHTMLConcurrencyTargets(t *testing.T) {
	evil := `<script>alert("x")</script>`
	page := writeHTML(t, concurrencyDocument([]string{"a&b", evil}, 2, 2))
	checkTagsBalanced(t, page)
	if strings.Contains(page, "<script") {
		t.Fatal("target name reached the page unescaped")
	}
	rate, _ := concurrencyPart(t, page, "tcp-stream/1")
	lines := ofClass(rate, "series")
	if len(lines) != 4 {
		t.Fatalf("%d lines, want 4 (2 targets x 2 paths)", len(lines))
	}
	dashed := 0
	for _, l := range lines {
		if l.attrs["stroke-dasharray"] != "" {
			dashed++
		}
	}
	if dashed != 2 {
		t.Errorf("%d dashed lines, want the second target's 2", dashed)
	}
	var texts []string
	for _, e := range rate {
		texts = append(texts, e.text)
	}
	all := strings.Join(texts, "\n")
	for _, s := range []string{"a&b", evil, evil + " · cross-node"} {
		if !strings.Contains(all, s) {
			t.Errorf("rate chart lacks %q in its legend or titles", s)
		}
	}
}

// TestWriteHTMLNoConcurrency checks that a report of one pair count has no concurrency part,
// nor does one whose workloads each ran at a single, other count.
func TestWriteHTMLNoConcurrency(t *testing.T) {
	single := synthDocument("r1", []string{"a"}, []string{suite.HostNetwork, suite.SameNode}, 3, 9)
	ten := concurrencyDocument([]string{"a"}, 2, 3)
	var rows []analysis.Row
	for _, r := range ten.Rows {
		if r.Pairs == 10 {
			rows = append(rows, r)
		}
	}
	ten.Rows = rows
	for name, d := range map[string]Document{"pairs 1": single, "pairs 10 only": ten} {
		page := writeHTML(t, d)
		for _, s := range []string{`class="concurrency"`, "line-chart", `href="#c-`, ": concurrency"} {
			if strings.Contains(page, s) {
				t.Errorf("%s: page has %q", name, s)
			}
		}
	}
}

// TestLineChartSinglePoints checks that a series without any CI gets no band and that the
// chart still draws a marker per point.
func TestLineChartSinglePoints(t *testing.T) {
	c := lineChart{Title: "t", Unit: "u", Levels: []int{1, 2}, Colours: newPathColours([]string{suite.HostNetwork}),
		Series: []lineSeries{{Group: "g", Path: suite.HostNetwork, Points: []linePoint{
			{Level: 0, Value: 3, Low: math.NaN(), High: math.NaN()}, {Level: 1, Value: 5, Low: math.NaN(), High: math.NaN()}}}}}
	elems := svgElems(t, c.SVG())
	if got := len(ofClass(elems, "band")); got != 0 {
		t.Errorf("%d bands for a series without CI", got)
	}
	if got := len(ofClass(elems, "point")); got != 2 {
		t.Errorf("%d points, want 2", got)
	}
	if s := c.SVG(); strings.Contains(s, "NaN") {
		t.Errorf("NaN in chart:\n%s", s)
	}
}
