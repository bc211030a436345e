package kube

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// TestUnansweredRequestsAreNoted checks that a request whose deadline passes while the server
// holds its answer is noted, naming it, and that neither one answered in time nor one its
// caller cancelled is.
func TestUnansweredRequestsAreNoted(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	defer close(release)
	var mu sync.Mutex
	var notes []string
	client := &http.Client{Transport: unanswered{next: http.DefaultTransport, after: 50 * time.Millisecond, note: func(what string) {
		mu.Lock()
		defer mu.Unlock()
		notes = append(notes, what)
	}}}
	get := func(ctx context.Context, path string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	get(ctx, "/answered")
	cancel()
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	get(ctx, "/hold") // cancelled by its caller, not unanswered
	ctx, cancel = context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	get(ctx, "/hold")
	// The note is taken in its own goroutine as the deadline passes.
	var n []string
	_ = wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		n = append([]string(nil), notes...)
		return len(n) > 0, nil
	})
	if len(n) != 1 || !strings.HasPrefix(n[0], "the server did not answer GET /hold in ") {
		t.Fatalf("notes %q, want one for GET /hold", n)
	}
}
