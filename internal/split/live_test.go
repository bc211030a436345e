package split

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/cluster/binaries"
)

// The live test runs the real k6 with Script, Argv and Env against a loopback split, to
// prove that the script runs, that k6 writes the CSV Summarize expects, and that the figures
// come out right. It needs k6 in $CNB_K6, on PATH or in the cache setup builds (CI's setup
// does), and is skipped otherwise and in -short mode. CNB_SPLIT_KEEP=DIR keeps the script and
// the CSV there.

// Loopback split of the live test.
const (
	liveHost    = "split.example"
	liveWeightA = 0.40 // backend-a's share of the non-failed requests
	liveErrors  = 0.05 // requests the proxy fails with 503
)

// splitProxy starts two backends answering their names and an L7 proxy routing each
// request on its own, as an Envoy weighted cluster does: 503 with probability liveErrors,
// else backend-a with probability liveWeightA. Requests without the route's Host get 404.
func splitProxy(t *testing.T) string {
	t.Helper()
	name := func(n string) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, n) }))
		t.Cleanup(s.Close)
		return s
	}
	to := func(s *httptest.Server) *httputil.ReverseProxy {
		u, _ := url.Parse(s.URL)
		p := httputil.NewSingleHostReverseProxy(u)
		p.Transport = &http.Transport{MaxIdleConnsPerHost: 256}
		return p
	}
	a, b := to(name("backend-a")), to(name("backend-b"))
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Host != liveHost:
			http.Error(w, "no route for "+r.Host, http.StatusNotFound)
		case rand.Float64() < liveErrors:
			http.Error(w, "injected failure", http.StatusServiceUnavailable)
		case rand.Float64() < liveWeightA:
			a.ServeHTTP(w, r)
		default:
			b.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(proxy.Close)
	return proxy.URL + "/"
}

func findK6(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("live k6 test skipped in -short mode")
	}
	if p := os.Getenv("CNB_K6"); p != "" {
		return p
	}
	if p, err := exec.LookPath("k6"); err == nil {
		return p
	}
	// Where setup builds it (`setup --all`, which the tests' setup runs): CI always has it.
	p := binaries.Default().Path(binaries.K6Binary)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("k6 neither on PATH nor built in the cache (%v): run `cnibench setup --all`", err)
	}
	return p
}

func TestLiveK6Split(t *testing.T) {
	k6 := findK6(t)
	dir := t.TempDir()
	if keep := os.Getenv("CNB_SPLIT_KEEP"); keep != "" {
		dir = keep
	}
	o := ScriptOptions{URL: splitProxy(t), Host: liveHost, VUs: 10, Duration: 10 * time.Second}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	script, csvPath := filepath.Join(dir, "split.js"), filepath.Join(dir, "split.csv")
	if err := os.WriteFile(script, []byte(Script(o)), 0o644); err != nil {
		t.Fatal(err)
	}
	argv := Argv(script, csvPath)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, k6, argv[1:]...)
	cmd.Env = append(os.Environ(), Env()...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("k6: %v\n%s", err, out)
	}

	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := Summarize(f, SummaryOptions{First: "backend-a", Weight: 100 * liveWeightA})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("requests %d errors %d rate %.0f/s share %.4f accuracy %+.4f [%+.4f, %+.4f] mad %.4f p50/p90/p99 %.3f/%.3f/%.3f ms windows %d dropped %v",
		s.Requests, s.Errors, s.Rate, s.Share, s.Accuracy.Mean, s.Accuracy.CILow, s.Accuracy.CIHigh, s.Accuracy.MeanAbs,
		s.Latency.P50, s.Latency.P90, s.Latency.P99, len(s.Windows), s.Dropped != nil)

	// Each iteration is one request: k6's own http_reqs rows must match the counter's.
	if n := countRows(t, csvPath, "http_reqs"); n != s.Requests {
		t.Errorf("requests: Summarize counted %d, k6 wrote %d http_reqs rows", s.Requests, n)
	}
	if s.Requests < 500 {
		t.Fatalf("only %d requests in 10 s: the test did not run", s.Requests)
	}
	// Binomial tolerances: 4 standard deviations, a false alarm in 16000 runs.
	tol := func(p float64, n int64) float64 { return 4 * math.Sqrt(p*(1-p)/float64(n)) }
	if e := float64(s.Errors) / float64(s.Requests); math.Abs(e-liveErrors) > tol(liveErrors, s.Requests) {
		t.Errorf("error fraction: got %.4f, want %.2f (Host header or status check broken?)", e, liveErrors)
	}
	if s.Latency.N != s.Requests-s.Errors || !(s.Latency.P50 > 0) || !(s.Latency.P99 >= s.Latency.P50) {
		t.Errorf("latency: got %+v for %d successes", s.Latency, s.Requests-s.Errors)
	}
	if math.Abs(float64(s.Share)-liveWeightA) > tol(liveWeightA, s.Requests-s.Errors) {
		t.Errorf("share: got %.4f, want %.2f", s.Share, liveWeightA)
	}
	if len(s.Windows) != 2 || s.Accuracy.N != 2 {
		t.Errorf("a 10 s test in 5 s windows: got %d windows, accuracy over %d, want 2", len(s.Windows), s.Accuracy.N)
	}
	if !(s.Accuracy.CILow <= 0 && s.Accuracy.CIHigh >= 0) && math.Abs(float64(s.Accuracy.Mean)) > 0.02 {
		t.Errorf("accuracy: %+v excludes 0", s.Accuracy)
	}
	if s.Backends["backend-a"]+s.Backends["backend-b"]+s.Errors != s.Requests || len(s.Backends) != 2 {
		t.Errorf("backends: got %v", s.Backends)
	}
}

// countRows counts a metric's rows the simplest way, as a cross-check of Summarize.
func countRows(t *testing.T, path, metric string) int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var n int64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), metric+",") {
			n++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}
