package pgserver

import (
	"errors"
	"path/filepath"
	"testing"
)

// Server is a PostgreSQL server of one test's own, which the test may stop and start again:
// a store whose server goes away and comes back, which the shared server of Main must not do
// to the other tests.
type Server struct{ srv *pgServer }

// Own starts a throw-away server for the test alone, stopped and removed when the test ends.
// It skips the test where PostgreSQL is not installed and fails it where it should be (as
// root), as Require does.
func Own(t testing.TB) *Server {
	t.Helper()
	srv, err := startPostgres()
	if err != nil {
		var u unavailable
		if errors.As(err, &u) && u.skip {
			t.Skip("PostgreSQL: " + u.err.Error())
		}
		t.Fatal("PostgreSQL: " + err.Error())
	}
	t.Cleanup(srv.stop)
	return &Server{srv: srv}
}

// URL is the URL of the server's postgres database, as its superuser.
func (s *Server) URL() string { return s.srv.admin }

// Stop shuts the server down, keeping its data, as an operator's restart would.
func (s *Server) Stop() { s.srv.halt() }

// Start starts the stopped server again, on its port and data, and waits until it accepts
// connections.
func (s *Server) Start() error {
	return s.srv.run(s.srv.bin, s.srv.cred, filepath.Join(s.srv.dir, "sock"))
}
