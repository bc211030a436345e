package serve

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/cnibench/cnibench/internal/compare"
)

// compareQuery is the query of the compare page: two runs (a=RUN, b=RUN, each may be
// RUN/TARGET), or two targets of one run (run=RUN, a=TARGET, b=TARGET); tolerance is the
// gate's (default 0 %).
type compareQuery struct {
	Run, A, B, Tolerance string
}

// comparePage is the compare page.
type comparePage struct {
	Query    compareQuery
	A, B     string // the sides as compared, RUN/TARGET with full run IDs
	Headline string // the gate's verdict
	Outcome  string // compare.GatePass, GateFail or GateInconclusive
	Text     string // the comparison and the gate as `cnibench compare --fail-on worse` prints them
}

// sides reads the two sides of the query.
func (q compareQuery) sides() (a, b compare.Side, param string, err error) {
	if q.Run != "" {
		if q.A == "" || q.B == "" {
			return a, b, "a", errors.New("with run=RUN, a= and b= name two of its targets")
		}
		return compare.Side{Run: q.Run, Target: q.A}, compare.Side{Run: q.Run, Target: q.B}, "", nil
	}
	if a, err = compare.ParseSide(q.A); err != nil {
		return a, b, "a", err
	}
	if b, err = compare.ParseSide(q.B); err != nil {
		return a, b, "b", err
	}
	return a, b, "", nil
}

// compare compares two runs, or two targets of a run, and judges it as the gate does.
func (s *server) compare(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	q := compareQuery{Run: v.Get("run"), A: v.Get("a"), B: v.Get("b"), Tolerance: v.Get("tolerance")}
	if q.A == "" && q.B == "" && q.Run == "" {
		s.render(w, r, http.StatusOK, "compare", "Compare", comparePage{Query: q}, map[string]string{
			"usage": "/compare?a=RUN&b=RUN (each RUN or RUN/TARGET), or /compare?run=RUN&a=TARGET&b=TARGET; tolerance=5% sets the gate's"})
		return
	}
	a, b, param, err := q.sides()
	if err != nil {
		s.badRequest(w, r, param, err)
		return
	}
	gate := compare.Gate{}
	if q.Tolerance != "" {
		if gate.Tolerance, err = compare.ParseTolerance(q.Tolerance); err == nil {
			err = gate.Validate()
		}
		if err != nil {
			s.badRequest(w, r, "tolerance", err)
			return
		}
	}
	// The runs are found first, so that a run that is not there is a 404 naming it.
	for _, side := range []*compare.Side{&a, &b} {
		run, err := s.resolve(r.Context(), side.Run)
		if err != nil {
			s.runFailed(w, r, err)
			return
		}
		side.Run = run.ID
	}
	res, err := compare.Compare(r.Context(), s.store, compare.Options{A: a, B: b})
	var ue *unavailableError
	switch {
	case errors.As(err, &ue):
		s.storeFailed(w, r, err)
		return
	case err != nil:
		s.fail(w, r, http.StatusBadRequest, "Cannot compare", err.Error())
		return
	}
	judged := gate.Evaluate(res)
	res.Gate = &judged
	s.writeComparison(w, r, q, res, judged)
}

// writeComparison writes the comparison: compare's JSON, or a page of its table and the gate.
func (s *server) writeComparison(w http.ResponseWriter, r *http.Request, q compareQuery, res compare.Result, judged compare.GateResult) {
	var buf bytes.Buffer
	if wantsJSON(r) {
		if err := compare.Write(&buf, compare.FormatJSON, res); err != nil {
			s.internal(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = buf.WriteTo(w)
		return
	}
	if err := compare.Write(&buf, compare.FormatTable, res); err != nil {
		s.internal(w, err)
		return
	}
	if err := compare.WriteGate(&buf, compare.FormatTable, judged); err != nil {
		s.internal(w, err)
		return
	}
	p := comparePage{Query: q, A: res.A.Label(), B: res.B.Label(), Headline: judged.Headline(), Outcome: judged.Outcome, Text: buf.String()}
	s.render(w, r, http.StatusOK, "compare", fmt.Sprintf("Compare %s with %s", p.A, p.B), p, nil)
}

// compareURL is the address of the comparison of two targets of a run.
func compareURL(run, a, b string) string {
	return "/compare?" + url.Values{"run": {run}, "a": {a}, "b": {b}}.Encode()
}
