package serve_test

import (
	"context"
	"fmt"
	"github.com/cnibench/cnibench/internal/testsupport"
	"github.com/cnibench/cnibench/internal/testsupport/aarun"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/cnibench/cnibench/internal/catalog"
	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/serve"
	"github.com/cnibench/cnibench/internal/store"
	"github.com/cnibench/cnibench/internal/testsupport/seedstore"
)

// envScreenshots names a directory the browser test writes a PNG of each page into.
const envScreenshots = "CNIBENCH_SCREENSHOTS"

// browserRuns is what storeRuns stored: the real run and the synthetic ones, by label.
type browserRuns struct {
	aa      string   // the A/A run's ID
	main    []string // the runs labelled branch=main, oldest first
	feature string   // the run labelled branch=feature
}

// storeRuns stores the real A/A run, as a run writes it, and four synthetic runs of
// two targets with labels: three on branch main, one on a feature branch.
func storeRuns(t testing.TB, db *store.DB) browserRuns {
	t.Helper()
	ctx := context.Background()
	aa := aarun.Store(t, db)
	fx := browserRuns{aa: aa.Run.ID}
	start := time.Date(2026, 11, 20, 2, 0, 0, 0, time.UTC)
	for i, branch := range []string{"main", "main", "feature", "main"} {
		id := fmt.Sprintf("202611%02d-020000-%s", 20+i, branch)
		// The feature branch's flannel is 20 % slower: the comparison has something to show.
		slow := 1.0
		if branch == "feature" {
			slow = 0.8
		}
		r := seedstore.Run{ID: id, Started: start.Add(time.Duration(i) * 24 * time.Hour),
			Labels:  map[string]string{"branch": branch, "commit": fmt.Sprintf("c%d", i+1)},
			Targets: []record.Target{{Name: "flannel"}, {Name: "cilium"}},
			Cells:   seedCells(slow, i)}
		if err := seedstore.Add(ctx, db, r); err != nil {
			t.Fatal(err)
		}
		if branch == "feature" {
			fx.feature = id
		} else {
			fx.main = append(fx.main, id)
		}
	}
	return fx
}

// seedCells are the cells of a synthetic run: tcp-stream and tcp-rr on two paths of both
// targets, 8 rounds, one failed sample each; flannel's rates scaled by slow.
func seedCells(slow float64, i int) []seedstore.Cell {
	var cells []seedstore.Cell
	for _, target := range []string{"flannel", "cilium"} {
		scale := 1.0
		if target == "flannel" {
			scale = slow
		}
		for _, path := range []string{"same-node", "cross-node"} {
			base := 1.0 + 0.01*float64(i)
			if path == "cross-node" {
				base *= 0.7
			}
			cells = append(cells,
				seedstore.Cell{Target: target, Path: path, Workload: "tcp-stream/1", Failed: 1,
					Metrics:   map[string][]float64{catalog.Throughput: seedstore.Normal(8, 9.5*base*scale, 0.3)},
					Resources: map[string][]float64{"cpu_s_per_gb": seedstore.Normal(8, 0.4/base, 0.02)}},
				seedstore.Cell{Target: target, Path: path, Workload: "tcp-rr/64B",
					Metrics: map[string][]float64{
						catalog.TransactionRate: seedstore.Normal(8, 50000*base*scale, 900),
						catalog.LatencyMean:     seedstore.Normal(8, 20/(base*scale), 0.5),
						catalog.LatencyP50:      seedstore.Normal(8, 18/(base*scale), 0.5),
						catalog.LatencyP99:      seedstore.Normal(8, 60/(base*scale), 2),
					}})
		}
	}
	return cells
}

// widths are the window widths every page is checked at: a laptop and a narrow window (a
// half screen, a tablet).
var widths = []int64{1400, 800}

// tab is one browser tab on the server, with what went wrong in it so far.
type tab struct {
	t    *testing.T
	ctx  context.Context
	base *url.URL
	shot string // where screenshots go; empty: nowhere

	mu       sync.Mutex
	problems []string
	// allowed are the URLs (path and query) whose HTTP error status the test asks for.
	allowed map[string]int64
}

// newTab starts chromium, headless and kept off every network but the test server's, and
// opens a tab that records console errors, uncaught exceptions, the browser's own error log
// (a resource that failed, a blocked script), failed requests, HTTP errors and requests to
// any other host.
func newTab(t *testing.T, base string) *tab {
	t.Helper()
	bin := testsupport.Chromium(t)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("force-device-scale-factor", "1"), chromedp.WindowSize(int(widths[0]), 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	tb := &tab{t: t, base: u, shot: os.Getenv(envScreenshots), allowed: map[string]int64{}}
	if err := chromedp.Listen(ctx, tb.event); err != nil { // starts the browser
		t.Fatalf("start chromium: %v", err)
	}
	// A bound on every action after the start: a link that never shows would otherwise wait
	// for the test binary's timeout.
	var cancelActions context.CancelFunc
	tb.ctx, cancelActions = context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(cancelActions)
	return tb
}

// event records an event that means the page is broken. It runs on chromedp's reading
// goroutine: it only appends under the lock.
func (tb *tab) event(ev any) {
	var problem string
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			var args []string
			for _, a := range ev.Args {
				args = append(args, string(a.Value)+a.Description)
			}
			problem = fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(args, " "))
		}
	case *runtime.EventExceptionThrown:
		problem = "uncaught exception: " + ev.ExceptionDetails.Text
		if ev.ExceptionDetails.Exception != nil {
			problem += " " + ev.ExceptionDetails.Exception.Description
		}
	case *cdplog.EventEntryAdded:
		// A resource that failed logs an error too: not one the test asked for.
		if ev.Entry.Level == cdplog.EntryLevelError && !tb.isAllowed(ev.Entry.URL, 0) {
			problem = fmt.Sprintf("browser log (%s): %s %s", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL)
		}
	case *network.EventRequestWillBeSent:
		if r, err := url.Parse(ev.Request.URL); err == nil && r.Scheme != "data" && r.Host != tb.base.Host {
			problem = "request to another host: " + ev.Request.URL
		}
	case *network.EventLoadingFailed:
		problem = fmt.Sprintf("request failed: %s %s (blocked: %q)", ev.Type, ev.ErrorText, ev.BlockedReason)
	case *network.EventResponseReceived:
		if r := ev.Response; r.Status >= 400 && !tb.isAllowed(r.URL, r.Status) {
			problem = fmt.Sprintf("HTTP %d %s", r.Status, r.URL)
		}
	}
	if problem != "" {
		tb.mu.Lock()
		tb.problems = append(tb.problems, problem)
		tb.mu.Unlock()
	}
}

// isAllowed says whether the test asked for an HTTP error status at raw: this one, or any
// when status is 0.
func (tb *tab) isAllowed(raw string, status int64) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	tb.mu.Lock()
	defer tb.mu.Unlock()
	want, ok := tb.allowed[u.RequestURI()]
	return ok && (status == 0 || want == status)
}

// check fails the test with every problem recorded since the last check, naming the page.
func (tb *tab) check(at string) {
	tb.t.Helper()
	tb.mu.Lock()
	problems := tb.problems
	tb.problems = nil
	tb.mu.Unlock()
	for _, p := range problems {
		tb.t.Errorf("%s: %s", at, p)
	}
}

// open loads path (with its query) and checks its HTTP status: want, or 200 when want is 0.
// It returns the page's visible text.
func (tb *tab) open(path string, want int64) string {
	tb.t.Helper()
	if want == 0 {
		want = http.StatusOK
	} else {
		tb.mu.Lock()
		tb.allowed[path] = want
		tb.mu.Unlock()
	}
	resp, err := chromedp.Run(tb.ctx, chromedp.NavigateResponse(tb.base.String()+path))
	if err != nil {
		tb.t.Fatalf("open %s: %v", path, err)
	}
	if resp.Status != want {
		tb.t.Errorf("%s: HTTP %d, want %d", path, resp.Status, want)
	}
	return tb.text(path)
}

// text is the visible text of the page now shown.
func (tb *tab) text(at string) string {
	tb.t.Helper()
	s, err := chromedp.Run(tb.ctx, chromedp.Evaluate[string](`document.body.innerText`))
	if err != nil {
		tb.t.Fatalf("%s: read the text: %v", at, err)
	}
	return s
}

// follow clicks the first link whose href contains part, waits for the page it leads to and
// returns that page's path and query.
func (tb *tab) follow(at, part string) string {
	tb.t.Helper()
	href, err := chromedp.Run(tb.ctx, chromedp.Evaluate[string](fmt.Sprintf(
		`(Array.from(document.querySelectorAll('a[href]')).map(a => a.getAttribute('href')).find(h => h.includes(%q)) || '')`, part)))
	if err != nil {
		tb.t.Fatalf("%s: look for a link to %s: %v", at, part, err)
	}
	if href == "" {
		tb.t.Fatalf("%s: no link whose address contains %q", at, part)
	}
	sel := chromedp.CSS(fmt.Sprintf(`a[href*=%q]`, part))
	resp, err := chromedp.RunResponse(tb.ctx, chromedp.Click(sel))
	if err != nil {
		tb.t.Fatalf("%s: follow the link to %s: %v", at, href, err)
	}
	if resp.Status != http.StatusOK {
		tb.t.Errorf("%s: the link to %s: HTTP %d", at, href, resp.Status)
	}
	return tb.location()
}

// overflowJS returns the document's scroll and client widths and, when the first is larger,
// the elements that stick out on the right, for the message.
const overflowJS = `(() => {
	const d = document.documentElement, out = [];
	if (d.scrollWidth > d.clientWidth) {
		for (const e of document.body.querySelectorAll('*')) {
			const r = e.getBoundingClientRect();
			if (r.right > d.clientWidth + 1 && out.length < 5) {
				out.push(e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + (e.className && e.className.baseVal === undefined ? '.' + e.className : '') + ' right=' + Math.round(r.right));
			}
		}
	}
	return {scroll: d.scrollWidth, client: d.clientWidth, culprits: out};
})()`

// layout checks the page shown at each width for horizontal overflow, and saves a
// screenshot at each width when asked to. It leaves the window at the first width.
func (tb *tab) layout(name string) {
	tb.t.Helper()
	type widthsOf struct {
		Scroll   int64    `json:"scroll"`
		Client   int64    `json:"client"`
		Culprits []string `json:"culprits"`
	}
	for _, w := range widths {
		if err := chromedp.Do(tb.ctx, chromedp.EmulateViewport(w, 900)); err != nil {
			tb.t.Fatal(err)
		}
		got, err := chromedp.Run(tb.ctx, chromedp.Evaluate[widthsOf](overflowJS))
		if err != nil {
			tb.t.Fatalf("%s at %d px: %v", name, w, err)
		}
		if got.Scroll > got.Client {
			tb.t.Errorf("%s at %d px: the page is %d px wide, the window %d: it scrolls sideways (%s)",
				name, w, got.Scroll, got.Client, strings.Join(got.Culprits, ", "))
		}
		if tb.shot != "" {
			tb.screenshot(fmt.Sprintf("%s-%d", name, w))
		}
	}
	if err := chromedp.Do(tb.ctx, chromedp.EmulateViewport(widths[0], 900)); err != nil {
		tb.t.Fatal(err)
	}
}

// screenshot saves the part of the page in the window as a PNG.
func (tb *tab) screenshot(name string) {
	tb.t.Helper()
	png, err := chromedp.Run(tb.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		tb.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.MkdirAll(tb.shot, 0o755); err != nil {
		tb.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tb.shot, "serve-"+name+".png"), png, 0o644); err != nil {
		tb.t.Fatal(err)
	}
}

// wants fails the test unless text holds every one of wanted and none of unwanted.
func wants(t *testing.T, at, text string, wanted []string, unwanted ...string) {
	t.Helper()
	for _, w := range wanted {
		if !strings.Contains(text, w) {
			t.Errorf("%s: no %q in the page's text:\n%s", at, w, clip(text))
		}
	}
	for _, u := range unwanted {
		if strings.Contains(text, u) {
			t.Errorf("%s: %q in the page's text:\n%s", at, u, clip(text))
		}
	}
}

func clip(s string) string {
	if len(s) > 3000 {
		return s[:3000] + "..."
	}
	return s
}

// submit fills the inputs of the page's first form (name, value pairs), submits it, waits
// for the page it leads to and returns that page's path and query.
func (tb *tab) submit(at string, fields ...string) string {
	tb.t.Helper()
	var steps []chromedp.Action[chromedp.Void]
	for i := 0; i+1 < len(fields); i += 2 {
		steps = append(steps, chromedp.SetValue(chromedp.CSS(fmt.Sprintf(`form input[name=%q]`, fields[i])), fields[i+1]))
	}
	if err := chromedp.Do(tb.ctx, steps...); err != nil {
		tb.t.Fatalf("%s: fill the form: %v", at, err)
	}
	resp, err := chromedp.RunResponse(tb.ctx, chromedp.Click(chromedp.CSS(`form button[type="submit"]`)))
	if err != nil {
		tb.t.Fatalf("%s: submit the form: %v", at, err)
	}
	if resp.Status != http.StatusOK {
		tb.t.Errorf("%s: the form's answer: HTTP %d", at, resp.Status)
	}
	return tb.location()
}

// location is the path and query of the page shown.
func (tb *tab) location() string {
	tb.t.Helper()
	loc, err := chromedp.Run(tb.ctx, chromedp.Location())
	if err != nil {
		tb.t.Fatal(err)
	}
	u, err := url.Parse(loc)
	if err != nil {
		tb.t.Fatal(err)
	}
	return u.RequestURI()
}

// browserServer stores the runs in a SQLite store and serves it read-only, as `cnibench
// serve --store FILE` does.
func browserServer(t *testing.T) (string, browserRuns) {
	t.Helper()
	loc := filepath.Join(t.TempDir(), "results.db")
	db, err := store.Open(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	runs := storeRuns(t, db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	ro, err := store.OpenReadOnly(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ro.Close() })
	srv := httptest.NewServer(serve.Handler(serve.Options{Store: ro, Where: loc}))
	t.Cleanup(srv.Close)
	return srv.URL, runs
}

// TestBrowser browses the server as a person does, in real Chromium, over a SQLite store
// holding the real A/A run and four labelled synthetic runs: the runs, filtered by label
// through the form; a run; a figure's samples and a sample's raw output; a comparison of the
// run's two targets and one of two runs; a history; an unknown run and a malformed selector.
// On every page it checks the rendered text and that nothing went wrong in the browser
// (console errors, exceptions, the browser's error log, failed or refused requests, HTTP
// errors not asked for, requests to another host); on each kind of page, that it does not
// scroll sideways at 1400 and 800 px.
func TestBrowser(t *testing.T) {
	begin := time.Now()
	base, fx := browserServer(t)
	tb := newTab(t, base)

	text := tb.open("/", 0)
	wants(t, "runs", text, []string{fx.aa, fx.feature, fx.main[0], "purpose=aa", "branch=main", "twin-a, twin-b", "flannel"})
	tb.check("runs")
	tb.layout("runs")

	at := tb.submit("runs", "label", "purpose=aa")
	wants(t, at, tb.text(at), []string{fx.aa, "1 run(s)"}, fx.feature, fx.main[0])
	tb.check(at)

	at = tb.follow(at, "/runs/"+fx.aa)
	wants(t, at, tb.text(at), []string{fx.aa, "twin-a", "twin-b", "cross-node", "tcp-stream/1", "tcp-rr/64B"})
	tb.check(at)
	tb.layout("run")

	at = tb.follow(at, "/runs/"+fx.aa+"/samples?")
	wants(t, at, tb.text(at), []string{"twin-", "round 1"})
	tb.check(at)
	tb.layout("samples")

	tb.open("/runs/"+fx.aa, 0)
	at = tb.follow("run "+fx.aa, "/compare?")
	wants(t, at, tb.text(at), []string{"twin-a", "twin-b", "tcp-stream/1", "cross-node"})
	tb.check(at)
	tb.layout("compare")

	at = "/runs/" + fx.feature + "/samples?target=flannel&path=same-node&workload=" + url.QueryEscape("tcp-stream/1")
	wants(t, at, tb.open(at, 0), []string{"flannel · same-node · tcp-stream/1", seedstore.FailedError[:20]})
	at = tb.follow(at, "/raw")
	wants(t, at, tb.text(at), []string{`"note": "a,b"`, `\done`})
	tb.check(at)

	tb.open("/compare", 0)
	at = tb.submit("compare", "a", fx.main[2]+"/flannel", "b", fx.feature+"/flannel")
	wants(t, at, tb.text(at), []string{fx.main[2], fx.feature, "flannel", "tcp-stream/1", "fail"})
	tb.check(at)

	tb.open("/history", 0)
	at = tb.submit("history", "selector", "branch=main")
	wants(t, at, tb.text(at), []string{"3 complete run(s)", "same-node", "tcp-stream/1"})
	tb.check(at)
	tb.layout("history")

	for path, want := range map[string]string{"/runs/20990101-000000-none": "20990101-000000-none", "/history?selector=%3D%3D": "selector"} {
		status := int64(http.StatusNotFound)
		if strings.HasPrefix(path, "/history") {
			status = http.StatusBadRequest
		}
		wants(t, path, tb.open(path, status), []string{want})
		tb.check(path)
	}
	t.Logf("browsed in %v", time.Since(begin).Round(time.Millisecond))
}
