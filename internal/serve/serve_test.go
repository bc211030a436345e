package serve_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/serve"
	"github.com/cnibench/cnibench/internal/setting"
	"github.com/cnibench/cnibench/internal/store"
	"github.com/cnibench/cnibench/internal/testsupport/seedstore"
)

// runsJSON is the JSON form of the runs page.
type runsJSON struct {
	Runs []struct {
		ID      string            `json:"id"`
		Status  string            `json:"status"`
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels"`
		Suite   string            `json:"suite"`
		Seconds float64           `json:"duration_s"`
	} `json:"runs"`
	Total, Page, Pages int
	Next               string `json:"next"`
}

func (r runsJSON) ids() []string {
	var out []string
	for _, x := range r.Runs {
		out = append(out, x.ID)
	}
	return out
}

// TestRunsPage: the runs, newest first with their targets, labels, suite, status and
// duration; each filter narrows them; the HTML and JSON forms agree.
func TestRunsPage(t *testing.T) {
	base, _ := sqliteServer(t, "")
	var all runsJSON
	decode(t, base+"/runs.json", &all)
	want := append([]string{running, devRun, lastMain}, reversed(mainRuns())...)
	if strings.Join(all.ids(), " ") != strings.Join(want, " ") {
		t.Fatalf("runs = %v, want newest first %v", all.ids(), want)
	}
	last := all.Runs[2]
	if strings.Join(last.Targets, ",") != "bridge,cilium" || last.Labels["branch"] != "main" || last.Status != record.StatusComplete || last.Seconds <= 0 {
		t.Errorf("last main run = %+v", last)
	}
	if all.Runs[0].Suite != "tcp-rr; on same-node; 3 repetitions" || all.Runs[0].Status != record.StatusRunning {
		t.Errorf("running run = %+v", all.Runs[0])
	}
	html := page(t, base+"/", http.StatusOK)
	mustContain(t, "runs page", html, `href="/runs/`+lastMain+`"`, "branch=main", "bridge, cilium", `<span class="status status-running">running</span>`)
	if r := get(t, http.MethodGet, base+"/", "Accept", "application/json"); r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
		t.Errorf("Accept: application/json gave %d %s", r.status, r.header.Get("Content-Type"))
	}
	for query, want := range map[string]string{
		"label=branch%3Ddev":                   devRun,
		"label=branch%3Dmain&target=cilium":    lastMain,
		"since=2026-11-02&until=2026-11-02":    "20261102-100000-aa02",
		"until=2026-11-01T23:00:00Z":           firstMain,
		"suite=tcp-rr":                         running,
		"label=%21branch":                      running,
		"since=2026-11-06T00:00:00Z&target=br": "",
	} {
		var got runsJSON
		decode(t, base+"/runs.json?"+query, &got)
		if strings.Join(got.ids(), " ") != want {
			t.Errorf("?%s: runs %v, want %q", query, got.ids(), want)
		}
	}
}

// TestRunsPaged: 50 runs a page, the next page linked, a page past the end empty.
func TestRunsPaged(t *testing.T) {
	loc := t.TempDir() + "/results.db"
	db, err := store.Open(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	for i := range serve.PageSize + 3 {
		r := seedstore.Run{ID: "run-" + time.Duration(i).String() + "-x", Started: day.Add(time.Duration(i) * time.Minute),
			Targets: []record.Target{{Name: "t"}}, Cells: []seedstore.Cell{{Target: "t", Path: "same-node", Workload: "cpu",
				Metrics: map[string][]float64{"ops": {1}}, NoWarmup: true}}}
		if err := seedstore.Add(context.Background(), db, r); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	base := serveStore(t, loc, "")
	var p1, p2, p3 runsJSON
	decode(t, base+"/runs.json", &p1)
	if len(p1.Runs) != serve.PageSize || p1.Total != serve.PageSize+3 || p1.Pages != 2 || p1.Next != "?page=2" {
		t.Fatalf("page 1: %d runs, total %d, pages %d, next %q", len(p1.Runs), p1.Total, p1.Pages, p1.Next)
	}
	decode(t, base+"/runs.json"+p1.Next, &p2)
	if len(p2.Runs) != 3 || p2.Runs[2].ID != "run-0s-x" || p2.Next != "" {
		t.Errorf("page 2: %v, next %q", p2.ids(), p2.Next)
	}
	decode(t, base+"/runs.json?page=9", &p3)
	if len(p3.Runs) != 0 {
		t.Errorf("page 9: %v", p3.ids())
	}
	mustContain(t, "page 1", page(t, base+"/", http.StatusOK), `href="/?page=2"`, "page 1 of 2")
}

// hrefs are the links of a page, unescaped.
func hrefs(body string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`href="([^"]*)"`).FindAllStringSubmatch(body, -1) {
		out = append(out, strings.ReplaceAll(m[1], "&amp;", "&"))
	}
	return out
}

// TestRunPageLinksFiguresToSamples: a run's page is the report's (verdict, charts, history),
// each chart links to the samples of its cells, and a sample links to its raw output; every
// link of every page leads somewhere, and no page refers to anything outside the server.
func TestRunPageLinksFiguresToSamples(t *testing.T) {
	base, _ := sqliteServer(t, "")
	run := page(t, base+"/runs/"+lastMain, http.StatusOK)
	mustContain(t, "run page", run, "Verdict", "throughput_gbps", "<svg", "History", "Where the CPU goes", `samples: <a href="/runs/`+lastMain+`/samples?`)
	var samples string
	for _, h := range hrefs(run) {
		if strings.Contains(h, "/samples?") && strings.Contains(h, "target=cilium") {
			samples = h
		}
	}
	if samples == "" {
		t.Fatalf("no link to cilium's samples on the run page:\n%s", cut(run))
	}
	body := page(t, base+samples, http.StatusOK)
	mustContain(t, "samples page", body, "Sample 100: cilium", "profiled sample output", `{&#34;round&#34;: 1, &#34;note&#34;: &#34;a,b&#34;}`)
	if strings.Contains(body, "Sample 1: bridge") || strings.Contains(body, ": bridge ·") {
		t.Errorf("cilium's samples list bridge's:\n%s", cut(body))
	}
	raw := get(t, http.MethodGet, base+"/runs/"+lastMain+"/samples/100/raw")
	if raw.status != http.StatusOK || raw.body != "profiled sample output" || !strings.HasPrefix(raw.header.Get("Content-Type"), "text/plain") {
		t.Errorf("raw = %d %q %s", raw.status, raw.body, raw.header.Get("Content-Type"))
	}
	seen := map[string]bool{}
	for _, p := range []string{"/", "/runs/" + lastMain, samples, "/compare?" + url.Values{"run": {lastMain}, "a": {"bridge"}, "b": {"cilium"}}.Encode(),
		"/history?selector=branch%3Dmain", "/runs/" + lastMain + "/flamegraph"} {
		body := page(t, base+p, http.StatusOK)
		bare := strings.ReplaceAll(body, `xmlns="http://www.w3.org/2000/svg"`, "")
		if m := regexp.MustCompile(`(?i)(src=|<link|@import|url\(|https?://|<script)`).FindString(bare); m != "" {
			t.Errorf("%s refers to something outside the server (%s)", p, m)
		}
		for _, h := range hrefs(body) {
			if strings.HasPrefix(h, "#") || seen[h] {
				continue
			}
			seen[h] = true
			if r := get(t, http.MethodGet, base+h); r.status != http.StatusOK {
				t.Errorf("link %s on %s: status %d", h, p, r.status)
			}
		}
	}
}

// TestCompareHistoryFlameGraph: a comparison of two targets of a run and of two runs, with
// the gate's verdict; the history with its change point; a profiled cell's flame graph, and a
// cell without one a 404 listing the profiled cells.
func TestCompareHistoryFlameGraph(t *testing.T) {
	base, _ := sqliteServer(t, "")
	body := page(t, base+"/compare?run="+lastMain+"&a=bridge&b=cilium", http.StatusOK)
	mustContain(t, "compare page", body, "gate: ", lastMain+"/bridge", lastMain+"/cilium", "throughput_gbps", "worse")
	var res struct {
		A    struct{ Run, Target string }
		B    struct{ Run, Target string }
		Gate *struct {
			Outcome string `json:"outcome"`
		} `json:"gate"`
	}
	decode(t, base+"/compare.json?a="+firstMain+"&b=20261104", &res)
	if res.A.Run != firstMain || res.B.Run != stepRun || res.Gate == nil || res.Gate.Outcome == "" {
		t.Errorf("two runs compared: %+v", res)
	}
	hist := page(t, base+"/history?selector=branch%3Dmain", http.StatusOK)
	mustContain(t, "history page", hist, "bridge cross-node tcp-stream/1 throughput_gbps", "6 runs", "worse at run "+stepRun, "<svg")
	var h []struct {
		Points  []any `json:"points"`
		Changes []any `json:"changes"`
	}
	decode(t, base+"/history.json?selector=branch%3Ddev", &h)
	if len(h) != 1 || len(h[0].Points) != 1 {
		t.Errorf("history of branch dev: %+v", h)
	}
	q := url.Values{"target": {"cilium"}, "path": {"cross-node"}, "workload": {"tcp-stream/1"}, "pairs": {"1"}}
	flame := page(t, base+"/runs/"+lastMain+"/flamegraph?"+q.Encode(), http.StatusOK)
	mustContain(t, "flame graph", flame, "<svg", "tcp_sendmsg", "memcpy")
	q.Set("target", "bridge")
	none := page(t, base+"/runs/"+lastMain+"/flamegraph?"+q.Encode(), http.StatusNotFound)
	mustContain(t, "flame graph of an unprofiled cell", none, "no profile of that cell", `href="/runs/`+lastMain+`/flamegraph?pairs=1&amp;path=cross-node&amp;target=cilium&amp;workload=tcp-stream%2F1"`)
}

// TestBadInput: a run that is not there is a 404 naming it, a malformed parameter a 400
// naming the parameter, and neither stops the server.
func TestBadInput(t *testing.T) {
	base, _ := sqliteServer(t, "")
	for path, want := range map[string]string{
		"/runs/20990101-nope":                         `20990101-nope`,
		"/runs/20990101-nope/samples":                 `20990101-nope`,
		"/runs/20990101-nope.json":                    `20990101-nope`,
		"/runs/2026":                                  "is the start of 8 run IDs",
		"/compare?a=" + firstMain + "&b=20990101":     `20990101`,
		"/runs/" + lastMain + "/samples/999/raw":      "has no sample 999",
		"/no/such/page":                               "/no/such/page",
		"/runs/" + lastMain + "/flamegraph?target=zz": "no profile of that cell",
	} {
		body := page(t, base+path, http.StatusNotFound)
		mustContain(t, path, body, want)
	}
	for path, param := range map[string]string{
		"/?label=%3Dx":              "label: ",
		"/?label=a+b%3Dc":           "label: ",
		"/?since=yesterday":         "since: ",
		"/?page=0":                  "page: ",
		"/history?selector=%21%21x": "selector: ",
		"/history?last=-2":          "last: ",
		"/compare?a=&b=" + lastMain: "a: ",
		"/compare?a=" + lastMain + "&b=x&tolerance=lots": "tolerance: ",
		"/runs/" + lastMain + "/samples?pairs=two":       "pairs: ",
	} {
		body := page(t, base+path, http.StatusBadRequest)
		mustContain(t, path, body, param)
	}
	// Two targets of a run compared as if one: the run is found, the comparison cannot be made.
	mustContain(t, "compare of a two-target run", page(t, base+"/compare?a="+lastMain+"&b="+firstMain, http.StatusBadRequest), "name one as")
	page(t, base+"/", http.StatusOK)
}

// TestToken: with a token, a request without it or with another is a 401 (the login form for a
// browser), the bearer token or the cookie of the login form let it through, and the form
// refuses a wrong token.
func TestToken(t *testing.T) {
	const token = "s3cret token; with \"odd\" bytes"
	base, _ := sqliteServer(t, token)
	mustContain(t, "401 page", page(t, base+"/", http.StatusUnauthorized), `<form method="post" action="/login"`)
	page(t, base+"/runs/"+lastMain, http.StatusUnauthorized, "Authorization", "Bearer nope")
	page(t, base+"/runs.json", http.StatusUnauthorized, "Authorization", "Bearer "+token+"x")
	page(t, base+"/runs/"+lastMain, http.StatusOK, "Authorization", "Bearer "+token)
	login := func(tok string) *http.Response {
		client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := client.PostForm(base+"/login", url.Values{"token": {tok}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := login("wrong"); resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
		t.Errorf("login with a wrong token: %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
	resp := login(token)
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 || !resp.Cookies()[0].HttpOnly {
		t.Fatalf("login: %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
	c := resp.Cookies()[0]
	page(t, base+"/history", http.StatusOK, "Cookie", c.Name+"="+c.Value)
	page(t, base+"/history", http.StatusUnauthorized, "Cookie", c.Name+"="+c.Value+"0")
}

// TestListenNeedsToken: an address other than a loopback one needs a token, refused as the
// token-file setting.
func TestListenNeedsToken(t *testing.T) {
	for _, listen := range []string{"", "127.0.0.1:0", "localhost:8080", "[::1]:9000", "127.0.0.2:80"} {
		if err := (serve.Options{Listen: listen}).Check(); err != nil {
			t.Errorf("Listen %q: %v", listen, err)
		}
	}
	for _, listen := range []string{":8080", "0.0.0.0:8080", "192.0.2.1:80", "[::]:80", "example.com:80"} {
		err := (serve.Options{Listen: listen}).Check()
		var se *setting.Error
		if !errors.As(err, &se) || se.Name != "token-file" {
			t.Errorf("Listen %q without a token: %v, want a token-file setting error", listen, err)
		}
		if err := (serve.Options{Listen: listen, Token: "t"}).Check(); err != nil {
			t.Errorf("Listen %q with a token: %v", listen, err)
		}
	}
}

// TestNeverWrites: no method but GET (and the login form's POST) is served, and browsing
// every page, JSON forms included, leaves the store exactly as it was.
func TestNeverWrites(t *testing.T) {
	base, loc := sqliteServer(t, "")
	before := dump(t, loc)
	paths := []string{"/", "/runs/" + lastMain, "/runs/" + lastMain + "/samples", "/runs/" + lastMain + "/samples/0/raw",
		"/compare?run=" + lastMain + "&a=bridge&b=cilium", "/history", "/runs/" + lastMain + "/flamegraph"}
	for _, p := range paths {
		for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch} {
			if r := get(t, method, base+p); r.status != http.StatusMethodNotAllowed {
				t.Errorf("%s %s: status %d, want 405", method, p, r.status)
			}
		}
		page(t, base+p, http.StatusOK)
		page(t, base+p, http.StatusOK, "Accept", "application/json")
	}
	if after := dump(t, loc); after != before {
		t.Error("the store changed while being served")
	}
}

// TestSeesNewRuns: a run stored while the server runs is on the next page loaded.
func TestSeesNewRuns(t *testing.T) {
	base, loc := sqliteServer(t, "")
	page(t, base+"/runs/20261201-000000-new1", http.StatusNotFound)
	db, err := store.Open(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r := seedstore.Run{ID: "20261201-000000-new1", Started: day.AddDate(0, 1, 0), Labels: map[string]string{"branch": "main"},
		Targets: []record.Target{{Name: "bridge"}}, Cells: []seedstore.Cell{cell("bridge", 4)}}
	if err := seedstore.Add(context.Background(), db, r); err != nil {
		t.Fatal(err)
	}
	mustContain(t, "runs page after a new run", page(t, base+"/", http.StatusOK), "20261201-000000-new1")
	page(t, base+"/runs/20261201-000000-new1", http.StatusOK)
	mustContain(t, "history after a new run", page(t, base+"/history?selector=branch%3Dmain", http.StatusOK), "7 runs")
}

func reversed(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[len(xs)-1-i] = x
	}
	return out
}
