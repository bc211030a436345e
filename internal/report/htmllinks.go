package report

import (
	"fmt"
	"html/template"
	"io"

	"github.com/cnibench/cnibench/internal/history"
	"github.com/cnibench/cnibench/internal/record"
)

// Link is a link of a page: its text and its address.
type Link struct{ Name, URL string }

// HTMLOptions is what a server showing the report adds to the page of WriteHTML; the zero
// value is the report file's page.
type HTMLOptions struct {
	// Nav are links shown above the title (to the server's other pages).
	Nav []Link
	// Samples is the address of the samples of a cell of run; non-nil, every chart of a
	// workload links to the samples of each cell it draws.
	Samples func(run string, c record.Cell) string
}

// WriteHTMLWith is WriteHTML with the links of o: the same verdict, charts and tables.
func WriteHTMLWith(w io.Writer, docs []Document, o HTMLOptions) error {
	m, err := buildModel(docs)
	if err != nil {
		return err
	}
	tmpl, err := template.New("report").Parse(pageTemplate)
	if err != nil {
		return fmt.Errorf("parse html report template: %w", err)
	}
	p := m.htmlPage()
	p.Nav = o.Nav
	if o.Samples != nil {
		for i, s := range m.sections {
			links := m.sampleLinks(s, o.Samples)
			for j := range p.Sections[i].Charts {
				p.Sections[i].Charts[j].Links = links
			}
		}
	}
	if err := tmpl.Execute(w, p); err != nil {
		return fmt.Errorf("write html report: %w", err)
	}
	return nil
}

// sampleLinks are the links to the samples of each cell of a workload's section, in the order
// of its rows.
func (m model) sampleLinks(s section, href func(string, record.Cell) string) []Link {
	var out []Link
	seen := map[string]bool{}
	for _, r := range s.rows {
		t := m.targets[r.target]
		name := t.label + " · " + r.Path
		if seen[name] {
			continue
		}
		seen[name] = true
		out = append(out, Link{Name: name, URL: href(m.docs[t.doc].Run.ID, r.Cell())})
	}
	return out
}

// HistoryChart is one series of a history as the report draws it: a title, a line naming its
// change points, and the chart.
type HistoryChart struct {
	Title, Line string
	SVG         template.HTML
}

// HistoryCharts draws each series of at least two runs as the report's history does, no run
// ringed.
func HistoryCharts(series []history.Series) []HistoryChart {
	drawn := htmlHistories("", series, "")
	out := make([]HistoryChart, len(drawn))
	for i, h := range drawn {
		out[i] = HistoryChart(h)
	}
	return out
}
