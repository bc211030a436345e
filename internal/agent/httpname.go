package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/cnibench/cnibench/internal/setting"
)

// NameServerOptions configures the HTTP server that answers with its pod's name, the backend
// of a weighted split.
type NameServerOptions struct {
	Port int       // TCP port to listen on
	Name string    // what every response says; empty: the host name, which is the pod's name
	Log  io.Writer // receives the "listening" line; nil discards it
}

// RunNameServer answers every HTTP request with Name and a newline until ctx ends: the client
// of a split counts responses by backend from the body alone.
func RunNameServer(ctx context.Context, o NameServerOptions) error {
	if o.Port < 1 || o.Port > 65535 {
		return &setting.Error{Name: "port", Value: strconv.Itoa(o.Port), Want: "expected 1-65535"}
	}
	if o.Name == "" {
		h, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("name: none given and no host name: %w", err)
		}
		o.Name = h
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	ln, err := listenConfig().Listen(ctx, "tcp", net.JoinHostPort("", strconv.Itoa(o.Port)))
	if err != nil {
		return fmt.Errorf("name server: listen on port %d: %w", o.Port, err)
	}
	body := []byte(o.Name + "\n")
	srv := &http.Server{
		ReadHeaderTimeout: 10 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			_, _ = w.Write(body)
		}),
	}
	fmt.Fprintf(o.Log, "name server %q listening on %s\n", o.Name, ln.Addr())
	stop := context.AfterFunc(ctx, func() { _ = srv.Close() })
	defer stop()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
