package serve_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/testsupport/pgserver"
)

// TestPostgres: the pages over a real PostgreSQL store, read-only.
func TestPostgres(t *testing.T) {
	loc := pgserver.NewDatabase(t)
	fill(t, loc)
	before := dump(t, loc)
	base := serveStore(t, loc, "")
	var runs runsJSON
	decode(t, base+"/runs.json?label=branch%3Dmain", &runs)
	if runs.Total != 6 || runs.Runs[0].ID != lastMain {
		t.Fatalf("runs of branch main = %v", runs.ids())
	}
	mustContain(t, "run page", page(t, base+"/runs/"+lastMain, http.StatusOK), "Verdict", "throughput_gbps", "/samples?")
	mustContain(t, "compare page", page(t, base+"/compare?run="+lastMain+"&a=bridge&b=cilium", http.StatusOK), "gate: ")
	mustContain(t, "history page", page(t, base+"/history?selector=branch%3Dmain", http.StatusOK), "worse at run "+stepRun)
	page(t, base+"/runs/"+lastMain+"/samples/100/raw", http.StatusOK)
	page(t, base+"/runs/20990101", http.StatusNotFound)
	if get(t, http.MethodDelete, base+"/runs/"+lastMain).status != http.StatusMethodNotAllowed {
		t.Error("DELETE was served")
	}
	if dump(t, loc) != before {
		t.Error("the store changed while being served")
	}
}

// TestStoreGoneIs503: while the PostgreSQL server is stopped every page that reads the store
// is a 503 saying so, in HTML and JSON; the server keeps serving, and its pages work again,
// without a restart, once the database server is back.
func TestStoreGoneIs503(t *testing.T) {
	srv := pgserver.Own(t)
	fill(t, srv.URL())
	base := serveStore(t, srv.URL(), "")
	page(t, base+"/", http.StatusOK)
	srv.Stop()
	for _, p := range []string{"/", "/runs/" + lastMain, "/runs/" + lastMain + "/samples", "/compare?run=" + lastMain + "&a=bridge&b=cilium",
		"/history", "/runs/" + lastMain + "/flamegraph"} {
		mustContain(t, p, page(t, base+p, http.StatusServiceUnavailable), "The results store cannot be read", "did not answer")
		mustContain(t, p+" as JSON", page(t, base+p, http.StatusServiceUnavailable, "Accept", "application/json"), `"status": 503`)
	}
	page(t, base+"/?since=yesterday", http.StatusBadRequest) // what needs no store is still answered
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for get(t, http.MethodGet, base+"/").status != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatalf("the pages did not come back with the store: %s", cut(get(t, http.MethodGet, base+"/").body))
		}
		time.Sleep(200 * time.Millisecond)
	}
	mustContain(t, "run page after the store came back", page(t, base+"/runs/"+lastMain, http.StatusOK), "Verdict")
}
