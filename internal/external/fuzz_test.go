package external

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/testsupport/fuzzcheck"
)

// fuzzToken is the token of the fuzzed agent.
const fuzzToken = "3b1f0c9e"

// FuzzAPI sends requests to the external agent's control API: without the token every request
// is refused (401) and touches nothing; with it, a body is refused with a 400 that names what
// it expected, never a 5xx or a panic. The agent may run no server at all (max 0), so no
// request starts a process.
func FuzzAPI(f *testing.F) {
	for _, auth := range []string{"Bearer " + fuzzToken, "Bearer", "bearer " + fuzzToken, ""} {
		f.Add("POST", "/servers", auth, `[{"workload":"tcp-stream/1","port":25201},{"workload":"tcp-rr/1B","port":0}]`)
		f.Add("GET", "/whoami", auth, "")
	}
	f.Add("DELETE", "/servers", "Bearer "+fuzzToken, "")
	f.Add("POST", "/servers", "Bearer "+fuzzToken, `[]`)
	f.Add("POST", "/servers", "Bearer "+fuzzToken, `{"workload":1}`)
	f.Add("PUT", "/../servers?x=%zz", "Bearer "+fuzzToken, strings.Repeat("[", 600))
	f.Fuzz(func(t *testing.T, method, path, auth, body string) {
		req, err := http.NewRequest(method, "http://agent"+path, strings.NewReader(body))
		if err != nil {
			return // not a request a client can send
		}
		req.Header.Set("Authorization", auth)
		req.RemoteAddr = "192.0.2.1:40000"
		m := &serverSet{log: io.Discard, byPort: map[int]*child{}, next: firstFreePort, max: 0}
		h := m.routes(fuzzToken)
		rec := httptest.NewRecorder()
		fuzzcheck.Within(t, "control API", func() { h.ServeHTTP(rec, req) })
		if len(m.byPort) != 0 {
			t.Fatalf("%s %s started servers", method, path)
		}
		if auth != "Bearer "+fuzzToken {
			if rec.Code != http.StatusUnauthorized || m.seen.Load() != 0 {
				t.Fatalf("%s %s with Authorization %q: status %d (seen %d), want 401 and no trace", method, path, auth, rec.Code, m.seen.Load())
			}
			return
		}
		if rec.Code >= 500 {
			t.Fatalf("%s %s: status %d: %s", method, path, rec.Code, rec.Body)
		}
		if rec.Code == http.StatusBadRequest {
			fuzzcheck.Names(t, errorText(rec.Body.String()), "body: ", "servers: ")
		}
	})
}

// FuzzServerArgv checks the servers a request names, as the agent does before starting one:
// an error names the port or the workload.
func FuzzServerArgv(f *testing.F) {
	f.Add(`[{"workload":"tcp-stream/1","port":25201},{"workload":"tcp-rr/1B+cnibench","port":1024},{"workload":"udp-stream/1G/1300B","port":65535}]`)
	f.Add(`[{"workload":"cpu/1","port":25201},{"workload":"tcp-rr/1B","port":80},{"workload":"ping","port":99999}]`)
	f.Fuzz(func(t *testing.T, body string) {
		var req []Server
		if json.Unmarshal([]byte(body), &req) != nil {
			return
		}
		m := &serverSet{self: "/usr/local/bin/cnibench", log: io.Discard, byPort: map[int]*child{}}
		for _, s := range req {
			var argv []string
			var err error
			fuzzcheck.Within(t, "argv", func() { argv, err = m.argv(s) })
			if err != nil {
				fuzzcheck.Names(t, err, "port", "workload")
				continue
			}
			if len(argv) == 0 || argv[0] == "" {
				t.Fatalf("argv(%+v) = %q", s, argv)
			}
		}
	})
}

// errorText is an HTTP error body as an error, for fuzzcheck.Names.
type errorText string

func (e errorText) Error() string { return string(e) }
