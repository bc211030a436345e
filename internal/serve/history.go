package serve

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/internal/history"
	"github.com/cnibench/cnibench/internal/label"
	"github.com/cnibench/cnibench/internal/report"
)

// historyPage is the history page.
type historyPage struct {
	Selector, Last, Target, Path, Workload, Metrics string
	Headline                                        string
	Runs, Series                                    int
	Charts                                          []report.HistoryChart
}

// parseHistory reads the query of the history page; an error names the parameter.
func parseHistory(p *historyPage, get func(string) string) (history.Options, string, error) {
	*p = historyPage{Selector: get("selector"), Last: get("last"), Target: get("target"), Path: get("path"),
		Workload: get("workload"), Metrics: get("metrics")}
	o := history.Options{Target: p.Target, Path: p.Path, Workload: p.Workload}
	var err error
	if o.Selector, err = label.ParseSelector(p.Selector); err != nil {
		return o, "selector", err
	}
	if p.Last != "" {
		if o.Last, err = strconv.Atoi(p.Last); err != nil || o.Last < 0 {
			return o, "last", fmt.Errorf("%q: expected how many of the newest runs, 0 for all", p.Last)
		}
	}
	if p.Metrics != "" {
		o.Metrics = strings.Split(p.Metrics, ",")
	}
	return o, "", nil
}

// history follows each cell's figures over the complete runs a selector picks, with their
// change points, as `cnibench history` does and drawn as the report draws them.
func (s *server) history(w http.ResponseWriter, r *http.Request) {
	var p historyPage
	o, param, err := parseHistory(&p, r.URL.Query().Get)
	if err != nil {
		s.badRequest(w, r, param, err)
		return
	}
	series, runs, err := history.BuildCounted(r.Context(), s.store, o)
	if err != nil {
		s.storeFailed(w, r, err)
		return
	}
	if wantsJSON(r) {
		var buf bytes.Buffer
		if err := history.Write(&buf, "json", series, runs); err != nil {
			s.internal(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = buf.WriteTo(w)
		return
	}
	p.Headline, p.Runs, p.Series, p.Charts = history.Headline(series, runs), runs, len(series), report.HistoryCharts(series)
	s.render(w, r, http.StatusOK, "history", "History", p, nil)
}
