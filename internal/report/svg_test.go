package report

import (
	"encoding/xml"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/suite"
)

func TestNiceTicks(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		want   string
	}{
		{0, 14.3, "0 5 10 15"},
		{0, 1, "0 0.2 0.4 0.6 0.8 1.0"},
		{0, 0.3, "0 0.1 0.2 0.3"},
		{0, 47000, "0 10k 20k 30k 40k 50k"},
		{0, 2.4e6, "0 500k 1.0M 1.5M 2.0M 2.5M"},
		{-3, 7, "-4 -2 0 2 4 6 8"},
		{0, 0.0238, "0 0.005 0.010 0.015 0.020 0.025"},
		{5, 5, "0 1"},
	} {
		ticks := niceTicks(c.lo, c.hi, 6)
		var labels []string
		for _, tk := range ticks {
			labels = append(labels, tickLabel(tk, ticks[1]-ticks[0]))
		}
		if got := strings.Join(labels, " "); got != c.want {
			t.Errorf("niceTicks(%g, %g) = %s, want %s", c.lo, c.hi, got, c.want)
		}
	}
}

func TestPathColours(t *testing.T) {
	c := newPathColours([]string{"zeta", suite.CrossNode, "alpha", suite.HostNetwork})
	if c.of(suite.HostNetwork) != knownPathColours()[suite.HostNetwork] || c.of(suite.CrossNode) != knownPathColours()[suite.CrossNode] {
		t.Error("known paths lost their fixed colours")
	}
	if c.of("alpha") != extraColours()[0] || c.of("zeta") != extraColours()[1] {
		t.Errorf("unknown paths: alpha %s zeta %s, want the extra colours in name order", c.of("alpha"), c.of("zeta"))
	}
	seen := map[string]bool{}
	for _, col := range append(extraColours(), func() []string {
		var k []string
		for _, v := range knownPathColours() {
			k = append(k, v)
		}
		return k
	}()...) {
		if seen[col] {
			t.Errorf("colour %s used twice", col)
		}
		seen[col] = true
	}
	if got := mix("#4e79a7", 1); got != "#ffffff" {
		t.Errorf("mix to white = %s", got)
	}
}

// box is the estimated extent of a drawn element.
type box struct {
	what           string
	x0, y0, x1, y1 float64
	text           string
}

func (a box) overlaps(b box) bool {
	return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1
}

// svgBoxes decodes a chart and estimates the boxes of its texts and bars.
func svgBoxes(t *testing.T, s string) []box {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(s))
	attr := func(e xml.StartElement, name string, def float64) float64 {
		for _, a := range e.Attr {
			if a.Name.Local == name {
				v, err := strconv.ParseFloat(a.Value, 64)
				if err != nil {
					t.Fatalf("%s=%q: %v", name, a.Value, err)
				}
				return v
			}
		}
		return def
	}
	anchorOf := func(e xml.StartElement) string {
		for _, a := range e.Attr {
			if a.Name.Local == "text-anchor" {
				return a.Value
			}
		}
		return "start"
	}
	var boxes []box
	var cur *xml.StartElement
	var text strings.Builder
	inTitle := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			switch e.Name.Local {
			case "title":
				inTitle++
			case "text":
				cur = &e
				text.Reset()
			case "rect":
				x, y := attr(e, "x", 0), attr(e, "y", 0)
				boxes = append(boxes, box{what: "rect", x0: x, y0: y, x1: x + attr(e, "width", 0), y1: y + attr(e, "height", 0)})
			}
		case xml.CharData:
			if cur != nil && inTitle == 0 {
				text.Write(e)
			}
		case xml.EndElement:
			switch e.Name.Local {
			case "title":
				inTitle--
			case "text":
				size := attr(*cur, "font-size", chartFont)
				// 0.6 em per character, independent of the code's own estimate, is about
				// DejaVu Sans (the font of the Debian chromium in CI) for this text.
				w := float64(len([]rune(text.String()))) * size * 0.6
				x, y := attr(*cur, "x", 0), attr(*cur, "y", 0)
				switch anchorOf(*cur) {
				case "end":
					x -= w
				case "middle":
					x -= w / 2
				}
				boxes = append(boxes, box{what: "text", x0: x, y0: y - size*0.8, x1: x + w, y1: y + size*0.2, text: text.String()})
				cur = nil
			}
		}
	}
	return boxes
}

// TestChartLayoutNoOverlap draws the busiest chart a suite makes (five paths, three targets,
// long names, three percentiles per row) and checks that no text touches other text or a
// bar, and that everything lies inside the chart.
func TestChartLayoutNoOverlap(t *testing.T) {
	paths := suite.AllPaths()
	d := synthDocument("r", []string{"kind-flannel-vxlan-ipvs", "kind-cilium", "b"}, paths, 5, 11)
	m, err := buildModel([]Document{d})
	if err != nil {
		t.Fatal(err)
	}
	colours := newPathColours(m.paths)
	for _, s := range m.sections {
		for _, c := range m.htmlSection(s, colours).Charts {
			svg := string(c.SVG)
			boxes := svgBoxes(t, svg)
			var vb [4]float64
			head := svg[:strings.Index(svg, ">")]
			i := strings.Index(head, `viewBox="`) + len(`viewBox="`)
			for k, f := range strings.Fields(head[i : i+strings.Index(head[i:], `"`)]) {
				vb[k], _ = strconv.ParseFloat(f, 64)
			}
			for a := range boxes {
				ba := boxes[a]
				if ba.x0 < -0.5 || ba.y0 < -0.5 || ba.x1 > vb[2]+0.5 || ba.y1 > vb[3]+0.5 {
					t.Errorf("%s %s: %s %q at [%.0f,%.0f]-[%.0f,%.0f] leaves the %gx%g chart", s.workload, c.Title, ba.what, ba.text, ba.x0, ba.y0, ba.x1, ba.y1, vb[2], vb[3])
				}
				for b := a + 1; b < len(boxes); b++ {
					bb := boxes[b]
					if (ba.what == "text" || bb.what == "text") && ba.overlaps(bb) {
						t.Errorf("%s %s: %s %q overlaps %s %q", s.workload, c.Title, ba.what, ba.text, bb.what, bb.text)
					}
				}
			}
		}
	}
}

func TestChartEdgeCases(t *testing.T) {
	colours := newPathColours([]string{"p"})
	nan := math.NaN()
	for name, c := range map[string]barChart{
		"all zero":  {Rows: []chartRow{{Path: "p", N: 3, Bars: []chartBar{{Value: 0, Low: 0, High: 0}}}}},
		"single":    {Rows: []chartRow{{Path: "p", N: 1, Bars: []chartBar{{Value: 3, Low: nan, High: nan}}}}},
		"negative":  {Rows: []chartRow{{Path: "p", N: 3, Bars: []chartBar{{Value: -2, Low: -3, High: -1}}}}},
		"below 0":   {Rows: []chartRow{{Path: "p", N: 2, Bars: []chartBar{{Value: 1, Low: -5, High: 7}}}}},
		"no data":   {Rows: []chartRow{{Path: "p", N: 0, Bars: []chartBar{{Value: nan, Low: nan, High: nan}}}}},
		"long name": {Rows: []chartRow{{Group: strings.Repeat("g", 200), Path: strings.Repeat("x", 100), N: 2, Bars: []chartBar{{Value: 1, Low: 0.5, High: 1.5}}}}},
		"empty":     {},
	} {
		c.Colours, c.Unit, c.Title = colours, "u <&>", "t \"'"
		s := c.SVG()
		checkXML(t, name, s)
		for _, bad := range []string{"NaN", "Inf"} {
			if strings.Contains(s, bad) {
				t.Errorf("%s: %s in chart:\n%s", name, bad, s)
			}
		}
		if name == "single" && strings.Count(s, "<path ") != 1 {
			t.Errorf("single: a whisker was drawn for n=1:\n%s", s)
		}
	}
}
