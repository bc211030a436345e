package serve_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/export"
	"github.com/cnibench/cnibench/internal/label"
	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/serve"
	"github.com/cnibench/cnibench/internal/store"
	"github.com/cnibench/cnibench/internal/testsupport/pgserver"
	"github.com/cnibench/cnibench/internal/testsupport/seedstore"
)

// TestMain runs the tests with a real PostgreSQL server beside the SQLite stores.
func TestMain(m *testing.M) { os.Exit(pgserver.Main(m, true)) }

// The seeded runs: six complete runs of branch main a day apart (bridge's throughput
// steps down from the fourth), the last of which has two targets and a profiled sample; one of
// branch dev; one still running.
const (
	firstMain = "20261101-100000-aa01"
	lastMain  = "20261106-100000-aa06"
	devRun    = "20261107-100000-dd01"
	running   = "20261108-100000-rr01"
	stepRun   = "20261104-100000-aa04" // the first run of the lower level
)

// mainRuns are the runs of branch main but the last, oldest first.
func mainRuns() []string {
	return []string{firstMain, "20261102-100000-aa02", "20261103-100000-aa03", stepRun, "20261105-100000-aa05"}
}

// day is the first run's start.
var day = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)

// cell is a tcp-stream cell of a target on cross-node, its throughput around mean.
func cell(target string, mean float64) seedstore.Cell {
	return seedstore.Cell{Target: target, Path: "cross-node", Workload: "tcp-stream/1",
		Metrics: map[string][]float64{"throughput_gbps": seedstore.Normal(5, mean, mean/50)}}
}

// fill stores the seeded runs through a writable store at loc.
func fill(t testing.TB, loc string) {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i, id := range mainRuns() {
		mean := 5.0
		if i >= 3 {
			mean = 4.0 // a step down the history marks
		}
		r := seedstore.Run{ID: id, Started: day.Add(time.Duration(i) * 24 * time.Hour), Labels: map[string]string{"branch": "main"},
			Targets: []record.Target{{Name: "bridge"}}, Cells: []seedstore.Cell{cell("bridge", mean)}}
		if err := seedstore.Add(ctx, db, r); err != nil {
			t.Fatal(err)
		}
	}
	last := seedstore.Run{ID: lastMain, Started: day.Add(5 * 24 * time.Hour), Labels: map[string]string{"branch": "main"},
		Targets: []record.Target{{Name: "bridge"}, {Name: "cilium"}}, Cells: []seedstore.Cell{cell("bridge", 4), cell("cilium", 3)}}
	dev := seedstore.Run{ID: devRun, Started: day.Add(6 * 24 * time.Hour), Labels: map[string]string{"branch": "dev"},
		Targets: []record.Target{{Name: "bridge"}}, Cells: []seedstore.Cell{cell("bridge", 4)}}
	for _, r := range []seedstore.Run{last, dev} {
		if err := seedstore.Add(ctx, db, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.CreateRun(ctx, record.Run{ID: running, Started: day.Add(7 * 24 * time.Hour), Status: record.StatusRunning,
		Suite: "paths: [same-node]\nworkloads:\n  - {kind: tcp-rr}\nrepetitions: 3\n"}); err != nil {
		t.Fatal(err)
	}
	// A profiled sample in the last run: its flame graph.
	if err := db.AddSample(ctx, record.Sample{RunID: lastMain, Seq: 100, Round: 6, Target: "cilium", Path: "cross-node",
		Workload: "tcp-stream/1", Pairs: 1, Started: day.Add(6*24*time.Hour - time.Minute), Duration: time.Second,
		Metrics: map[string]float64{"throughput_gbps": 3}, Raw: "profiled sample output",
		Profile: "iperf3;main;tcp_sendmsg_[k] 40\niperf3;main;memcpy 10\n"}); err != nil {
		t.Fatal(err)
	}
}

// sqliteServer fills a SQLite store and serves it, read-only, over HTTP; it returns the
// server's URL and the store's location.
func sqliteServer(t *testing.T, token string) (string, string) {
	t.Helper()
	loc := filepath.Join(t.TempDir(), "results.db")
	fill(t, loc)
	return serveStore(t, loc, token), loc
}

// serveStore opens the store at loc read-only and serves it.
func serveStore(t *testing.T, loc, token string) string {
	t.Helper()
	db, err := store.OpenReadOnly(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	srv := httptest.NewServer(serve.Handler(serve.Options{Store: db, Where: db.Location(), Token: token}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// response is what a request got.
type response struct {
	status int
	header http.Header
	body   string
}

// get requests url with the headers given as name, value pairs, not following redirects.
func get(t testing.TB, method, url string, headers ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: string(body)}
}

// page GETs url and fails the test unless the status is want; it returns the body.
func page(t testing.TB, url string, want int, headers ...string) string {
	t.Helper()
	r := get(t, http.MethodGet, url, headers...)
	if r.status != want {
		t.Fatalf("GET %s: status %d, want %d; body:\n%s", url, r.status, want, cut(r.body))
	}
	return r.body
}

// decode GETs the JSON form of url and decodes it into v.
func decode(t testing.TB, url string, v any) {
	t.Helper()
	body := page(t, url, http.StatusOK)
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("GET %s: %v; body:\n%s", url, err, cut(body))
	}
}

func cut(s string) string {
	if len(s) > 3000 {
		return s[:3000] + "..."
	}
	return s
}

// mustContain fails the test for each text that body lacks.
func mustContain(t testing.TB, what, body string, texts ...string) {
	t.Helper()
	for _, x := range texts {
		if !strings.Contains(body, x) {
			t.Errorf("%s lacks %q:\n%s", what, x, cut(body))
		}
	}
}

// dump is everything the store holds, to compare before and after requests.
func dump(t testing.TB, loc string) string {
	t.Helper()
	ctx := context.Background()
	db, err := store.OpenReadOnly(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	runs, err := export.List(ctx, db, label.Selector{})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, r := range runs {
		bundle, err := export.Load(ctx, db, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if err := export.WriteJSON(&b, bundle); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}
