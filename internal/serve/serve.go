// Package serve is `cnibench serve`: HTTP pages over a results store, read-only. The runs
// (filtered by label, target, suite and date, newest first, a page at a time), a run (the
// report's verdict and charts, each figure linked to its samples and their raw tool output),
// a comparison of two runs or two targets with the gate's view of it, the history of the
// runs a selector picks, and a run's flame graphs. Every page has a stable URL and a JSON form
// (Accept: application/json, or the path with ".json"); pages fetch nothing (the style is
// inline, charts are SVG) and read without JavaScript.
//
// It reads the store through Store, a narrow interface that *store.DB satisfies, on every
// request: a run finished while the server runs is on the next page loaded. It writes
// nothing: every route but the login form is GET.
package serve

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/setting"
)

// Store is what the pages read: the runs, and each run's targets and samples.
type Store interface {
	Runs(ctx context.Context) ([]record.Run, error)
	Run(ctx context.Context, idOrPrefix string) (record.Run, error)
	Targets(ctx context.Context, runID string) ([]record.Target, error)
	Samples(ctx context.Context, runID string) ([]record.Sample, error)
}

// Options configures the server.
type Options struct {
	Store Store
	// Where names the store in pages that say it cannot be read (its location, no password).
	Where string
	// Listen is the address to listen on, host:port; DefaultListen when empty.
	Listen string
	// Token, when not empty, is the secret every request must carry: an Authorization:
	// Bearer header, or the cookie the login form sets. Required unless Listen is loopback.
	Token string
	// TLS, when not nil, serves HTTPS.
	TLS *tls.Config
	// Log receives the line saying where the server listens and the server's own errors.
	Log io.Writer
}

// DefaultListen is where the server listens unless told otherwise: this host only.
const DefaultListen = "127.0.0.1:8080"

// Check refuses options that would expose the store: any address other than a loopback one
// needs a token.
func (o Options) Check() error {
	listen := o.Listen
	if listen == "" {
		listen = DefaultListen
	}
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return &setting.Error{Name: "listen", Value: listen, Err: err}
	}
	if o.Token == "" && !loopback(host) {
		return &setting.Error{Name: "token-file", Want: fmt.Sprintf("required to listen on %s, which is not a loopback address: "+
			"anyone who can reach it would read the store", listen)}
	}
	return nil
}

// loopback says whether host names this host only: localhost or a loopback address.
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Serve listens and serves until ctx ends.
func Serve(ctx context.Context, o Options) error {
	if err := o.Check(); err != nil {
		return err
	}
	if o.Listen == "" {
		o.Listen = DefaultListen
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return &setting.Error{Name: "listen", Value: o.Listen, Err: err}
	}
	scheme := "http"
	if o.TLS != nil {
		ln, scheme = tls.NewListener(ln, o.TLS), "https"
	}
	srv := &http.Server{Handler: Handler(o), ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(o.Log, "", 0)}
	fmt.Fprintf(o.Log, "serving the results store %s on %s://%s/\n", o.Where, scheme, ln.Addr())
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// server holds what the handlers share; nothing in it changes after Handler.
type server struct {
	store  Store
	where  string
	token  string
	secure bool // the cookie is sent over HTTPS only
	pages  pageSet
}

// Handler is the server's pages, behind the token where there is one.
func Handler(o Options) http.Handler {
	s := &server{store: tagged{o.Store}, where: o.Where, token: o.Token, secure: o.TLS != nil, pages: parsePages()}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.runs)
	mux.HandleFunc("GET /runs", s.runs)
	mux.HandleFunc("GET /runs/{id}", s.run)
	mux.HandleFunc("GET /runs/{id}/samples", s.samples)
	mux.HandleFunc("GET /runs/{id}/samples/{n}/raw", s.raw)
	mux.HandleFunc("GET /runs/{id}/flamegraph", s.flameGraph)
	mux.HandleFunc("GET /compare", s.compare)
	mux.HandleFunc("GET /history", s.history)
	mux.HandleFunc("GET /login", s.loginForm)
	mux.HandleFunc("POST /login", s.login)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, http.StatusNotFound, "No such page", fmt.Sprintf("Nothing is served at %s.", r.URL.Path))
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = withFormat(r)
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if !s.allowed(r) && r.URL.Path != "/login" {
			s.unauthorized(w, r, "")
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead && r.URL.Path != "/login" {
			w.Header().Set("Allow", "GET, HEAD")
			s.fail(w, r, http.StatusMethodNotAllowed, "Read-only", "This server only reads the store: "+r.Method+" is not served.")
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// tagged is the store with every error it returns marked as the store's (unavailableError), so
// that a page tells a store it cannot read from a request it cannot answer.
type tagged struct{ s Store }

func (t tagged) Runs(ctx context.Context) ([]record.Run, error) {
	runs, err := t.s.Runs(ctx)
	return runs, unavailable(err)
}

func (t tagged) Run(ctx context.Context, id string) (record.Run, error) {
	r, err := t.s.Run(ctx, id)
	return r, unavailable(err)
}

func (t tagged) Targets(ctx context.Context, id string) ([]record.Target, error) {
	targets, err := t.s.Targets(ctx, id)
	return targets, unavailable(err)
}

func (t tagged) Samples(ctx context.Context, id string) ([]record.Sample, error) {
	samples, err := t.s.Samples(ctx, id)
	return samples, unavailable(err)
}

// unavailableError is an error of the store.
type unavailableError struct{ err error }

func (e *unavailableError) Error() string { return e.err.Error() }
func (e *unavailableError) Unwrap() error { return e.err }

func unavailable(err error) error {
	if err == nil {
		return nil
	}
	return &unavailableError{err}
}
