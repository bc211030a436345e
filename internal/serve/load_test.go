package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/catalog"
	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/serve"
	"github.com/cnibench/cnibench/internal/store"
	"github.com/cnibench/cnibench/internal/testsupport/pgserver"
)

const (
	// envLoad runs TestLoad, a benchmark rather than a check: it takes its duration and its
	// figures depend on the machine.
	envLoad = "CNIBENCH_LOAD"
	// envLoadDuration is how long the clients browse (a Go duration; default 30s).
	envLoadDuration = "CNIBENCH_LOAD_DURATION"
	// envLoadClients is how many people browse at once (default 50).
	envLoadClients = "CNIBENCH_LOAD_CLIENTS"
)

// loadPage is one page the clients browse and the times it took.
type loadPage struct {
	name, path string
	mu         sync.Mutex
	times      []time.Duration
	errors     []string
}

func (p *loadPage) record(d time.Duration, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		if len(p.errors) < 5 {
			p.errors = append(p.errors, err.Error())
		}
		p.times = append(p.times, -1)
		return
	}
	p.times = append(p.times, d)
}

// TestLoad is the load benchmark (CNIBENCH_LOAD=1; without it a 3-second run of 8 clients,
// which checks the errors and the live run alone): 50 clients (CNIBENCH_LOAD_CLIENTS) browse the runs page,
// the real A/A run, one of its figures' samples, a comparison and a run being written, each
// page after the last, for CNIBENCH_LOAD_DURATION, while a writer adds a sample to that run
// every 20 ms through its own connection to the same PostgreSQL store, as `run` does. It
// reports the requests, the errors (there must be none) and each page's p50 and p99 time to
// the last byte, and checks that the server sees the written run finish without a restart.
//
//	CNIBENCH_LOAD=1 go test -run TestLoad -v ./internal/serve/
func TestLoad(t *testing.T) {
	duration, clients := loadSettings(t)
	ctx := context.Background()
	location := pgserver.NewDatabase(t)
	writer, err := store.Open(ctx, location)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	fx := storeRuns(t, writer)
	reader, err := store.OpenReadOnly(ctx, location) // the server's own connections, as `serve` opens the store
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	srv := httptest.NewServer(serve.Handler(serve.Options{Store: reader, Where: "the load test's store"}))
	defer srv.Close()

	const live = "20261201-020000-live"
	if err := writer.CreateRun(ctx, record.Run{ID: live, Started: time.Now().UTC(), Status: record.StatusRunning,
		Suite: "repetitions: 1000\n", Version: "test", Labels: map[string]string{"branch": "main", "commit": "live"}}); err != nil {
		t.Fatal(err)
	}
	if err := writer.AddTarget(ctx, record.Target{RunID: live, Name: "flannel"}); err != nil {
		t.Fatal(err)
	}
	pages := []*loadPage{
		{name: "runs", path: "/"},
		{name: "run", path: "/runs/" + fx.aa},
		{name: "samples", path: "/runs/" + fx.aa + "/samples?target=twin-a&path=cross-node&workload=" + url.QueryEscape("tcp-stream/1")},
		{name: "compare", path: "/compare?a=" + fx.main[2] + "/flannel&b=" + fx.feature + "/flannel"},
		{name: "live run", path: "/runs/" + live},
	}

	stop := make(chan struct{})
	written := make(chan []time.Duration, 1)
	go func() { written <- writeSamples(ctx, t, writer, live, stop) }()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}, Timeout: 30 * time.Second}
	elapsed := browse(client, srv.URL, pages, clients, duration)
	close(stop)
	writes := <-written
	if err := writer.FinishRun(ctx, live, record.StatusComplete, time.Now().UTC(), ""); err != nil {
		t.Fatal(err)
	}
	reportLoad(t, clients, pages, elapsed, writes)

	// The run finished while the server ran: the runs page says so, without a restart.
	body, err := fetchBody(client, srv.URL+"/runs.json?label=commit%3Dlive")
	if err != nil {
		t.Fatal(err)
	}
	var listed struct {
		Runs []struct{ ID, Status string } `json:"runs"`
	}
	if err := json.Unmarshal([]byte(body), &listed); err != nil {
		t.Fatalf("runs.json: %v", err)
	}
	if len(listed.Runs) != 1 || listed.Runs[0].ID != live || listed.Runs[0].Status != record.StatusComplete {
		t.Errorf("after the written run finished, the runs page lists %+v, want %s %s", listed.Runs, live, record.StatusComplete)
	}
}

// loadSettings reads the benchmark's duration and number of clients from the environment.
func loadSettings(t *testing.T) (time.Duration, int) {
	t.Helper()
	// Without CNIBENCH_LOAD, a short run: no error while clients browse and a run writes is
	// what every test run checks; the figures are the benchmark's.
	duration, clients := 3*time.Second, 8
	if os.Getenv(envLoad) != "" {
		duration, clients = 30*time.Second, 50
	}
	if s := os.Getenv(envLoadDuration); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("%s: %v", envLoadDuration, err)
		}
		duration = d
	}
	if s := os.Getenv(envLoadClients); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: expected a number of clients", envLoadClients, s)
		}
		clients = n
	}
	return duration, clients
}

// browse has clients load the pages in turn, each starting at its own, one after the other
// without a pause, until duration has passed; it returns how long they took to finish.
func browse(client *http.Client, base string, pages []*loadPage, clients int, duration time.Duration) time.Duration {
	begin := time.Now()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for i := c; time.Since(begin) < duration; i++ {
				p := pages[i%len(pages)]
				start := time.Now()
				err := fetch(client, base+p.path)
				p.record(time.Since(start), err)
			}
		})
	}
	wg.Wait()
	return time.Since(begin)
}

// writeSamples adds a sample to run every 20 ms (or as soon as the last is stored, when that
// takes longer) until stop closes, and returns how long each took to store.
func writeSamples(ctx context.Context, t *testing.T, db *store.DB, run string, stop <-chan struct{}) []time.Duration {
	var took []time.Duration
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for seq := 0; ; seq++ {
		select {
		case <-stop:
			return took
		case <-tick.C:
		}
		s := record.Sample{RunID: run, Seq: seq, Round: seq/4 + 1, Target: "flannel", Path: []string{"same-node", "cross-node"}[seq%2],
			Workload: "tcp-stream/1", Pairs: 1, Started: time.Now().UTC(), Duration: 10 * time.Millisecond,
			Metrics:   map[string]float64{catalog.Throughput: 9 + float64(seq%7)/10},
			Resources: map[string]float64{"cpu_s_per_gb": 0.4}, Raw: fmt.Sprintf("sample %d\n", seq)}
		start := time.Now()
		if err := db.AddSample(ctx, s); err != nil {
			t.Errorf("write sample %d: %v", seq, err)
			return took
		}
		took = append(took, time.Since(start))
	}
}

// fetch fetches a page to its last byte; anything but 200 is an error.
func fetch(client *http.Client, u string) error {
	_, err := fetchBody(client, u)
	return err
}

func fetchBody(client *http.Client, u string) (string, error) {
	resp, err := client.Get(u)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("GET %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: HTTP %d: %.200s", u, resp.StatusCode, body)
	}
	return string(body), nil
}

// reportLoad logs the figures of each page and of all, and fails on any error.
func reportLoad(t *testing.T, clients int, pages []*loadPage, elapsed time.Duration, writes []time.Duration) {
	t.Helper()
	var all []time.Duration
	requests, errors := 0, 0
	t.Logf("%d clients for %v; meanwhile %d samples written, each stored in p50 %v, p99 %v", clients,
		elapsed.Round(time.Millisecond), len(writes), quantile(writes, 0.50), quantile(writes, 0.99))
	t.Logf("%-9s %9s %7s %9s %9s", "page", "requests", "errors", "p50", "p99")
	for _, p := range pages {
		var ok []time.Duration
		for _, d := range p.times {
			if d >= 0 {
				ok = append(ok, d)
			}
		}
		n, bad := len(p.times), len(p.times)-len(ok)
		requests, errors = requests+n, errors+bad
		all = append(all, ok...)
		t.Logf("%-9s %9d %7d %9v %9v", p.name, n, bad, quantile(ok, 0.50), quantile(ok, 0.99))
		for _, e := range p.errors {
			t.Errorf("%s: %s", p.name, e)
		}
	}
	t.Logf("%-9s %9d %7d %9v %9v  (%.0f requests/s)", "all", requests, errors, quantile(all, 0.50), quantile(all, 0.99),
		float64(requests)/elapsed.Seconds())
	if errors > 0 {
		t.Errorf("%d of %d requests failed", errors, requests)
	}
	if requests == 0 {
		t.Error("no request completed")
	}
}

// quantile is the q-quantile of ds (nearest rank), rounded for reading.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(q*float64(len(s))+0.999999) - 1
	return s[max(0, min(i, len(s)-1))].Round(100 * time.Microsecond)
}
