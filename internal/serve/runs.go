package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/cnibench/cnibench/internal/label"
	"github.com/cnibench/cnibench/internal/record"
)

// PageSize is how many runs a page of the list shows.
const PageSize = 50

// runFilter is the query of the runs page.
type runFilter struct {
	Label        string // a label selector
	Target       string // a target's name
	Suite        string // text the suite's YAML contains
	Since, Until string // dates, YYYY-MM-DD or RFC 3339
	sel          label.Selector
	since, until time.Time
	page         int
}

// parseRunFilter reads the query; an error names the parameter that is wrong.
func parseRunFilter(q url.Values) (runFilter, string, error) {
	f := runFilter{Label: q.Get("label"), Target: q.Get("target"), Suite: q.Get("suite"), Since: q.Get("since"), Until: q.Get("until"), page: 1}
	var err error
	if f.sel, err = label.ParseSelector(f.Label); err != nil {
		return f, "label", err
	}
	if f.since, err = parseDate(f.Since, false); err != nil {
		return f, "since", err
	}
	if f.until, err = parseDate(f.Until, true); err != nil {
		return f, "until", err
	}
	if p := q.Get("page"); p != "" {
		if f.page, err = strconv.Atoi(p); err != nil || f.page < 1 {
			return f, "page", fmt.Errorf("%q: expected a page number from 1", p)
		}
	}
	return f, "", nil
}

// parseDate reads a date (a whole day, UTC) or an RFC 3339 time; end makes a date mean the
// end of its day, so that until=2026-11-27 includes the runs of the 27th.
func parseDate(s string, end bool) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q: expected a date (2026-11-27) or an RFC 3339 time (2026-11-27T14:00:00Z)", s)
	}
	if end {
		t = t.Add(24*time.Hour - time.Nanosecond)
	}
	return t, nil
}

// keeps says whether a run passes the filters other than the target's.
func (f runFilter) keeps(r record.Run) bool {
	return f.sel.Matches(r.Labels) && strings.Contains(r.Suite, f.Suite) &&
		(f.since.IsZero() || !r.Started.Before(f.since)) && (f.until.IsZero() || !r.Started.After(f.until))
}

// runLine is one run of the list.
type runLine struct {
	ID       string            `json:"id"`
	Started  time.Time         `json:"started"`
	Finished *time.Time        `json:"finished,omitempty"`
	Status   string            `json:"status"`
	Seconds  float64           `json:"duration_s,omitempty"`
	Duration string            `json:"-"`
	Targets  []string          `json:"targets"`
	Suite    string            `json:"suite"`
	Labels   map[string]string `json:"labels,omitempty"`
	Note     string            `json:"note,omitempty"`
}

// runsPage is the runs page and its JSON form.
type runsPage struct {
	Filter   runFilter `json:"-"`
	Runs     []runLine `json:"runs"`
	Total    int       `json:"total"`
	Page     int       `json:"page"`
	Pages    int       `json:"pages"`
	PageSize int       `json:"page_size"`
	Prev     string    `json:"prev,omitempty"`
	Next     string    `json:"next,omitempty"`
}

// runs is the list of runs, newest first, filtered and a page at a time.
func (s *server) runs(w http.ResponseWriter, r *http.Request) {
	f, param, err := parseRunFilter(r.URL.Query())
	if err != nil {
		s.badRequest(w, r, param, err)
		return
	}
	all, err := s.store.Runs(r.Context())
	if err != nil {
		s.storeFailed(w, r, err)
		return
	}
	sort.SliceStable(all, func(i, j int) bool {
		if !all[i].Started.Equal(all[j].Started) {
			return all[i].Started.After(all[j].Started)
		}
		return all[i].ID > all[j].ID
	})
	kept := slices.DeleteFunc(all, func(run record.Run) bool { return !f.keeps(run) })
	targets := map[string][]string{}
	if f.Target != "" {
		if kept, err = s.withTarget(r.Context(), kept, f.Target, targets); err != nil {
			s.storeFailed(w, r, err)
			return
		}
	}
	p := runsPage{Filter: f, Total: len(kept), Page: f.page, PageSize: PageSize, Pages: max(1, (len(kept)+PageSize-1)/PageSize), Runs: []runLine{}}
	from := min((f.page-1)*PageSize, len(kept))
	for _, run := range kept[from:min(from+PageSize, len(kept))] {
		names, ok := targets[run.ID]
		if !ok {
			if names, err = s.targetNames(r.Context(), run.ID); err != nil {
				s.storeFailed(w, r, err)
				return
			}
		}
		p.Runs = append(p.Runs, newRunLine(run, names))
	}
	if f.page > 1 {
		p.Prev = queryWith(r.URL.Query(), "page", strconv.Itoa(f.page-1))
	}
	if f.page < p.Pages {
		p.Next = queryWith(r.URL.Query(), "page", strconv.Itoa(f.page+1))
	}
	s.render(w, r, http.StatusOK, "runs", "Runs", p, p)
}

// withTarget keeps the runs that measured a target of that name, noting each run's targets.
func (s *server) withTarget(ctx context.Context, runs []record.Run, target string, names map[string][]string) ([]record.Run, error) {
	var out []record.Run
	for _, run := range runs {
		n, err := s.targetNames(ctx, run.ID)
		if err != nil {
			return nil, err
		}
		names[run.ID] = n
		if slices.Contains(n, target) {
			out = append(out, run)
		}
	}
	return out, nil
}

func (s *server) targetNames(ctx context.Context, runID string) ([]string, error) {
	targets, err := s.store.Targets(ctx, runID)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(targets))
	for i, t := range targets {
		names[i] = t.Name
	}
	return names, nil
}

// newRunLine describes a run for the list.
func newRunLine(r record.Run, targets []string) runLine {
	l := runLine{ID: r.ID, Started: r.Started, Status: r.Status, Targets: targets, Suite: suiteLine(r.Suite), Labels: r.Labels, Note: r.Note}
	if r.Interrupted() {
		l.Status = "interrupted"
	}
	if !r.Finished.IsZero() {
		fin := r.Finished
		l.Finished = &fin
		d := r.Finished.Sub(r.Started)
		l.Seconds, l.Duration = d.Seconds(), d.Round(time.Second).String()
	}
	if l.Targets == nil {
		l.Targets = []string{}
	}
	return l
}

// suiteLine sums a run's suite up in a line: its workloads' kinds, its paths and its
// repetitions. A suite that does not read as one is shown as its first line.
func suiteLine(doc string) string {
	var s struct {
		Paths     []string `json:"paths"`
		Workloads []struct {
			Kind string `json:"kind"`
		} `json:"workloads"`
		Repetitions int `json:"repetitions"`
	}
	if err := yaml.Unmarshal([]byte(doc), &s); err != nil {
		first, _, _ := strings.Cut(doc, "\n")
		return first
	}
	var kinds []string
	for _, w := range s.Workloads {
		if !slices.Contains(kinds, w.Kind) {
			kinds = append(kinds, w.Kind)
		}
	}
	var parts []string
	if len(kinds) > 0 {
		parts = append(parts, strings.Join(kinds, ", "))
	}
	if len(s.Paths) > 0 {
		parts = append(parts, "on "+strings.Join(s.Paths, ", "))
	}
	if s.Repetitions > 0 {
		parts = append(parts, fmt.Sprintf("%d repetitions", s.Repetitions))
	}
	return strings.Join(parts, "; ")
}

// queryWith is the query q with key set to value (removed when empty), as "?..." to link to.
func queryWith(q url.Values, key, value string) string {
	c := url.Values{}
	for k, v := range q {
		c[k] = slices.Clone(v)
	}
	if value == "" {
		c.Del(key)
	} else {
		c.Set(key, value)
	}
	if len(c) == 0 {
		return "?"
	}
	return "?" + c.Encode()
}

// errNoRun is a run ID that names no run, or several.
var errNoRun = errors.New("no such run")

// resolve finds the run an ID, or a unique prefix of one, names, from the list of runs: that
// a run is not there is a 404, not an error of the store.
func (s *server) resolve(ctx context.Context, id string) (record.Run, error) {
	runs, err := s.store.Runs(ctx)
	if err != nil {
		return record.Run{}, err
	}
	var found []record.Run
	for _, r := range runs {
		if r.ID == id {
			return r, nil
		}
		if id != "" && strings.HasPrefix(r.ID, id) {
			found = append(found, r)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return record.Run{}, fmt.Errorf("%w: no stored run has the ID %q", errNoRun, id)
	}
	ids := make([]string, len(found))
	for i, r := range found {
		ids[i] = r.ID
	}
	return record.Run{}, fmt.Errorf("%w: %q is the start of %d run IDs (%s): give more of it", errNoRun, id, len(found), strings.Join(ids, ", "))
}

// runFailed writes the page of an error finding or reading a run: 404 for a run that is not
// there, naming it.
func (s *server) runFailed(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, errNoRun) {
		s.fail(w, r, http.StatusNotFound, "No such run", err.Error())
		return
	}
	s.storeFailed(w, r, err)
}
