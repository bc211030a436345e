package serve

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/cnibench/cnibench/internal/export"
	"github.com/cnibench/cnibench/internal/history"
	"github.com/cnibench/cnibench/internal/label"
	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/report"
)

// load finds the run of the request's {id} and reads it whole; it has written the error page
// when ok is false.
func (s *server) load(w http.ResponseWriter, r *http.Request) (b export.Bundle, ok bool) {
	run, err := s.resolve(r.Context(), r.PathValue("id"))
	if err == nil {
		b, err = export.Load(r.Context(), s.store, run.ID)
	}
	if err != nil {
		s.runFailed(w, r, err)
		return b, false
	}
	return b, true
}

// run is a run's page: the report's verdict, history and charts, each chart linked to the
// samples of its cells; its JSON form is `cnibench results show -o json`'s.
func (s *server) run(w http.ResponseWriter, r *http.Request) {
	b, ok := s.load(w, r)
	if !ok {
		return
	}
	doc := report.NewDocument(b.Run, b.Targets, b.Samples)
	var buf bytes.Buffer
	if wantsJSON(r) {
		if err := report.Write(&buf, "json", doc); err != nil {
			s.storeFailed(w, r, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = buf.WriteTo(w)
		return
	}
	names := make([]string, len(b.Targets))
	for i, t := range b.Targets {
		names[i] = t.Name
	}
	var err error
	if doc.History, err = history.ForRun(r.Context(), s.store, b.Run, names, label.Selector{}); err != nil {
		s.storeFailed(w, r, err)
		return
	}
	o := report.HTMLOptions{Nav: runNav(b.Run.ID, names, len(doc.Profiles) > 0), Samples: samplesURL}
	if err := report.WriteHTMLWith(&buf, []report.Document{doc}, o); err != nil {
		s.storeFailed(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = buf.WriteTo(w)
}

// runNav links a run's page to the server's other pages and to what the run has more.
func runNav(id string, targets []string, profiled bool) []report.Link {
	nav := []report.Link{{Name: "runs", URL: "/"}, {Name: "samples", URL: "/runs/" + url.PathEscape(id) + "/samples"}}
	if len(targets) >= 2 {
		nav = append(nav, report.Link{Name: "compare " + targets[0] + " and " + targets[1], URL: compareURL(id, targets[0], targets[1])})
	}
	if profiled {
		nav = append(nav, report.Link{Name: "flame graphs", URL: "/runs/" + url.PathEscape(id) + "/flamegraph"})
	}
	return append(nav, report.Link{Name: "history", URL: "/history"}, report.Link{Name: "JSON", URL: "/runs/" + url.PathEscape(id) + ".json"})
}

// cellQuery is the query that picks a cell of a run.
func cellQuery(c record.Cell) url.Values {
	return url.Values{"target": {c.Target}, "path": {c.Path}, "workload": {c.Workload}, "pairs": {strconv.Itoa(max(c.Pairs, 1))}}
}

// samplesURL is the address of the samples of a cell of a run.
func samplesURL(run string, c record.Cell) string {
	return "/runs/" + url.PathEscape(run) + "/samples?" + cellQuery(c).Encode()
}

// cellFilter is the cell a page's query picks; an empty field picks every value.
type cellFilter struct {
	Target, Path, Workload string
	Pairs                  int
}

// parseCellFilter reads target, path, workload and pairs.
func parseCellFilter(q url.Values) (cellFilter, error) {
	f := cellFilter{Target: q.Get("target"), Path: q.Get("path"), Workload: q.Get("workload")}
	if p := q.Get("pairs"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 {
			return f, fmt.Errorf("%q: expected a whole number from 1", p)
		}
		f.Pairs = n
	}
	return f, nil
}

func (f cellFilter) keeps(c record.Cell) bool {
	return (f.Target == "" || f.Target == c.Target) && (f.Path == "" || f.Path == c.Path) &&
		(f.Workload == "" || f.Workload == c.Workload) && (f.Pairs == 0 || f.Pairs == c.Pairs)
}

// rawShown is how much of a sample's raw output its line shows; the raw link has it all.
const rawShown = 16 << 10

// sampleLine is a sample on the samples page, and in its JSON form.
type sampleLine struct {
	Seq       int                `json:"seq"`
	Round     int                `json:"round"`
	Warmup    bool               `json:"warmup"`
	Target    string             `json:"target"`
	Path      string             `json:"path"`
	Workload  string             `json:"workload"`
	Pairs     int                `json:"pairs"`
	Started   time.Time          `json:"started"`
	Seconds   float64            `json:"duration_s"`
	Metrics   map[string]float64 `json:"metrics,omitempty"`
	Resources map[string]float64 `json:"resources,omitempty"`
	Error     string             `json:"error,omitempty"`
	Flags     []string           `json:"flags,omitempty"`
	RawURL    string             `json:"raw_url"`
	Raw       string             `json:"-"`
	Cut       bool               `json:"-"`
}

// samplesPage is the samples page.
type samplesPage struct {
	Run     string       `json:"run"`
	Filter  cellFilter   `json:"cell"`
	Samples []sampleLine `json:"samples"`
}

// samples lists the samples of a run, or of the cell its query picks, each with its raw
// tool output.
func (s *server) samples(w http.ResponseWriter, r *http.Request) {
	f, err := parseCellFilter(r.URL.Query())
	if err != nil {
		s.badRequest(w, r, "pairs", err)
		return
	}
	b, ok := s.load(w, r)
	if !ok {
		return
	}
	p := samplesPage{Run: b.Run.ID, Filter: f, Samples: []sampleLine{}}
	for _, x := range b.Samples {
		c := x.Cell()
		if !f.keeps(c) {
			continue
		}
		l := sampleLine{Seq: x.Seq, Round: x.Round, Warmup: x.Warmup, Target: x.Target, Path: x.Path, Workload: x.Workload, Pairs: c.Pairs,
			Started: x.Started, Seconds: x.Duration.Seconds(), Metrics: x.Metrics, Resources: x.Resources, Error: x.Error, Flags: x.Flags,
			RawURL: fmt.Sprintf("/runs/%s/samples/%d/raw", url.PathEscape(b.Run.ID), x.Seq), Raw: x.Raw}
		if len(l.Raw) > rawShown {
			l.Raw, l.Cut = l.Raw[:rawShown], true
		}
		p.Samples = append(p.Samples, l)
	}
	s.render(w, r, http.StatusOK, "samples", "Samples of run "+b.Run.ID, p, p)
}

// raw is one sample's raw tool output, as the tool wrote it.
func (s *server) raw(w http.ResponseWriter, r *http.Request) {
	seq, err := strconv.Atoi(r.PathValue("n"))
	if err != nil {
		s.badRequest(w, r, "sample", fmt.Errorf("%q: expected a sample's number", r.PathValue("n")))
		return
	}
	b, ok := s.load(w, r)
	if !ok {
		return
	}
	for _, x := range b.Samples {
		if x.Seq != seq {
			continue
		}
		if wantsJSON(r) {
			writeJSON(w, http.StatusOK, map[string]any{"run": b.Run.ID, "seq": seq, "raw": x.Raw})
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte(x.Raw))
		return
	}
	s.fail(w, r, http.StatusNotFound, "No such sample", fmt.Sprintf("Run %s has no sample %d.", b.Run.ID, seq),
		link{Name: "the samples of run " + b.Run.ID, URL: "/runs/" + url.PathEscape(b.Run.ID) + "/samples"})
}

// flamePage is the flame graph page.
type flamePage struct {
	Run   string
	Title string
	SVG   template.HTML
}

// flameGraph draws the flame graph of one profiled cell of a run; a cell without a profile is a
// 404 listing the cells that have one (the whole list, with 200, when no cell is asked for).
func (s *server) flameGraph(w http.ResponseWriter, r *http.Request) {
	f, err := parseCellFilter(r.URL.Query())
	if err != nil {
		s.badRequest(w, r, "pairs", err)
		return
	}
	b, ok := s.load(w, r)
	if !ok {
		return
	}
	doc := report.NewDocument(b.Run, b.Targets, b.Samples)
	o := report.FlameGraphOptions{Target: f.Target, Path: f.Path, Workload: f.Workload, Pairs: f.Pairs, Folded: wantsJSON(r)}
	var buf bytes.Buffer
	err = report.WriteFlameGraphOf(&buf, doc, o)
	var np *report.NoProfileError
	switch {
	case errors.As(err, &np):
		s.noProfile(w, r, np, f == cellFilter{})
	case err != nil:
		s.fail(w, r, http.StatusNotFound, "No flame graph", err.Error())
	case wantsJSON(r):
		writeJSON(w, http.StatusOK, map[string]any{"run": b.Run.ID, "cell": f, "folded": buf.String()})
	default:
		title := fmt.Sprintf("Flame graph: run %s, %s %s %s", b.Run.ID, f.Target, f.Path, f.Workload)
		p := flamePage{Run: b.Run.ID, Title: title, SVG: template.HTML(buf.String())} //nolint:gosec // drawn by report, its text escaped
		s.render(w, r, http.StatusOK, "flamegraph", title, p, nil)
	}
}

// noProfile lists the profiled cells of a run as links; index says no cell was asked for.
func (s *server) noProfile(w http.ResponseWriter, r *http.Request, np *report.NoProfileError, index bool) {
	var links []link
	for _, c := range np.Have {
		cell := record.Cell{Target: c.Target, Path: c.Path, Workload: c.Workload, Pairs: c.Pairs}
		links = append(links, link{Name: fmt.Sprintf("%s · %s · %s", c.Target, c.Path, cell.WorkloadLabel()),
			URL: "/runs/" + url.PathEscape(np.Run) + "/flamegraph?" + cellQuery(cell).Encode()})
	}
	msg := fmt.Sprintf("Run %s has no CPU profiles: a run records them with --profile (or profile: true in its suite).", np.Run)
	if len(np.Have) > 0 {
		msg = fmt.Sprintf("Run %s has no profile of that cell. Its profiled cells:", np.Run)
	}
	if index && len(np.Have) > 0 {
		p := errorPage{Status: http.StatusOK, Title: "Flame graphs of run " + np.Run, Message: "Pick a profiled cell:", Links: links}
		s.render(w, r, http.StatusOK, "error", p.Title, p, p)
		return
	}
	s.fail(w, r, http.StatusNotFound, "No such profile", msg, links...)
}
