package agentabuse

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// result is what one kind of abuse saw: how many attempts, which ended otherwise than the
// agent must answer them (by outcome), and the longest time to the expected outcome.
type result struct {
	name  string
	mu    sync.Mutex
	n     int
	bad   map[string]int
	worst time.Duration
	note  string
}

// add records one attempt: problem is empty when the agent answered as it must.
func (r *result) add(d time.Duration, problem string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	if problem != "" {
		if r.bad == nil {
			r.bad = map[string]int{}
		}
		r.bad[problem]++
		return
	}
	r.worst = max(r.worst, d)
}

func (r *result) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var bad []string
	for p, n := range r.bad {
		bad = append(bad, fmt.Sprintf("%dx %s", n, p))
	}
	sort.Strings(bad)
	s := fmt.Sprintf("%-26s %6d attempts, %d not as required, slowest as required %v", r.name, r.n, r.n-r.expected(), r.worst.Round(time.Millisecond))
	if r.note != "" {
		s += "; " + r.note
	}
	if len(bad) > 0 {
		s += "\n\t" + strings.Join(bad, "\n\t")
	}
	return s
}

func (r *result) expected() int {
	n := r.n
	for _, b := range r.bad {
		n -= b
	}
	return n
}

// exchange sends one request on its own TLS connection and returns the status and body of
// the answer, within 30 s.
func exchange(p *agentProc, req string) (int, string, error) {
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 30 * time.Second}, "tcp", p.addr, p.tls)
	if err != nil {
		return 0, "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		return 0, "", err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return resp.StatusCode, strings.TrimSpace(string(b)), err
}

// request is the text of an HTTP/1.1 request to the agent.
func request(method, path, auth, body string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: agent\r\nConnection: close\r\n", method, path)
	if auth != "" {
		fmt.Fprintf(&b, "Authorization: %s\r\n", auth)
	}
	if body != "" || method == http.MethodPost {
		fmt.Fprintf(&b, "Content-Type: application/json\r\nContent-Length: %d\r\n", len(body))
	}
	return b.String() + "\r\n" + body
}

// check says what is wrong with an answer, or "" when it has the status and names want.
func check(status int, body string, err error, wantStatus int, want string) string {
	switch {
	case err != nil:
		return "error: " + err.Error()
	case status != wantStatus || !strings.Contains(body, want):
		return fmt.Sprintf("%d %q, want %d naming %q", status, body, wantStatus, want)
	}
	return ""
}

// parallel runs f on n goroutines until ctx ends.
func parallel(ctx context.Context, n int, f func()) {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for ctx.Err() == nil {
				f()
			}
		})
	}
	wg.Wait()
}

// badTokens sends requests without the token, with wrong ones and with overlong ones: each is
// refused with a 401 naming the token (431 where the header is over the agent's bound), and
// none starts anything.
func badTokens(ctx context.Context, p *agentProc, r *result) {
	start := `[{"workload":"tcp-rr/64B","port":0}]`
	cases := []struct {
		req, want string
		status    int
	}{
		{request("GET", "/whoami", "", ""), "missing or wrong token", 401},
		{request("POST", "/servers", "", start), "missing or wrong token", 401},
		{request("POST", "/servers", "Bearer wrong", start), "missing or wrong token", 401},
		{request("POST", "/servers", "Bearer "+p.token+"x", start), "missing or wrong token", 401},
		{request("POST", "/servers", "Bearer "+p.token[:len(p.token)-1], start), "missing or wrong token", 401},
		{request("DELETE", "/servers", p.token, ""), "missing or wrong token", 401},
		{request("GET", "/whoami", "Bearer "+strings.Repeat("a", 8<<10), ""), "missing or wrong token", 401},
		{request("POST", "/servers", "Bearer "+strings.Repeat(p.token, 1<<10), start), "431 Request Header Fields Too Large", 431},
	}
	var i atomic.Int64
	parallel(ctx, 4, func() {
		c := cases[int(i.Add(1))%len(cases)]
		t0 := time.Now()
		status, body, err := exchange(p, c.req)
		r.add(time.Since(t0), check(status, body, err, c.status, c.want))
	})
}

// malformed sends bodies that are no list of servers, with the token: each gets a 400 naming
// what is wrong, and starts nothing.
func malformed(ctx context.Context, p *agentProc, r *result) {
	cases := []struct{ body, want string }{
		{"not json", "body: expected a JSON list"},
		{`{"workload":"tcp-rr/64B","port":0}`, "body: expected a JSON list"},
		{`[{"workload":1,"port":0}]`, "field Server.workload of type string"},
		{`[{"workload":"tcp-rr/64B","port":"26000"}]`, "field Server.port of type int"},
		{`[{"workload":"tcp-rr/64B","port":1e99}]`, "field Server.port of type int"},
		{`[{"workload":"tcp-rr/64B","port":0,"ports":[1]}]`, `unknown field "ports"`},
		{`[{"workload":"tcp-rr/64B","port":0}] [{"workload":"tcp-rr/64B","port":0}]`, "more after the list"},
		{`[{"workload":"tcp-rr/64B","port":80}]`, "port: expected 1024-65535"},
		{`[{"workload":"","port":0}]`, `workload ""`},
		{`[{"workload":"tcp-rr/64B","port":0}`, "body: expected a JSON list"},
		{"", "body: expected a JSON list"},
	}
	var i atomic.Int64
	parallel(ctx, 2, func() {
		c := cases[int(i.Add(1))%len(cases)]
		t0 := time.Now()
		status, body, err := exchange(p, request("POST", "/servers", "Bearer "+p.token, c.body))
		r.add(time.Since(t0), check(status, body, err, 400, c.want))
	})
}

// oversized sends 100 MB bodies, with the token and without: each is refused (413 naming the
// body, 401) long before the agent could have read it; the note is the most any sender wrote
// before its answer came.
func oversized(ctx context.Context, p *agentProc, r *result) {
	var most atomic.Int64
	var i atomic.Int64
	parallel(ctx, 2, func() {
		auth, status, want := "Bearer "+p.token, 413, "body: expected a JSON list of {workload, port} of at most 1048576 bytes"
		if i.Add(1)%2 == 0 {
			auth, status, want = "Bearer wrong", 401, "missing or wrong token"
		}
		t0 := time.Now()
		st, body, wrote, err := sendHuge(p, auth)
		for m := most.Load(); wrote > m && !most.CompareAndSwap(m, wrote); m = most.Load() {
		}
		problem := check(st, body, err, status, want)
		if problem == "" && wrote >= hugeBody/4 {
			problem = fmt.Sprintf("answered only after %d bytes of the body", wrote)
		}
		r.add(time.Since(t0), problem)
	})
	r.note = fmt.Sprintf("at most %.1f MB of the 100 MB sent before the answer", float64(most.Load())/1e6)
}

// hugeBody is the size oversized announces and would send.
const hugeBody = 100 << 20

// sendHuge posts a 100 MB list of servers and returns the answer and how much of the body
// was written when it came.
func sendHuge(p *agentProc, auth string) (int, string, int64, error) {
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 30 * time.Second}, "tcp", p.addr, p.tls)
	if err != nil {
		return 0, "", 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(60 * time.Second))
	head := fmt.Sprintf("POST /servers HTTP/1.1\r\nHost: agent\r\nAuthorization: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n[", auth, hugeBody)
	if _, err := io.WriteString(c, head); err != nil {
		return 0, "", 0, err
	}
	var wrote atomic.Int64
	go func() {
		chunk := []byte(strings.Repeat(`{"workload":"tcp-rr/64B","port":0},`, 2000))
		for wrote.Load() < hugeBody {
			n, err := c.Write(chunk)
			wrote.Add(int64(n))
			if err != nil {
				return
			}
		}
	}()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	at := wrote.Load()
	if err != nil {
		return 0, "", at, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return resp.StatusCode, strings.TrimSpace(string(b)), at, nil
}

// tlsGarbage speaks anything but TLS to the TLS port: plain HTTP gets the server's 400, and
// random bytes (alone, or after a TLS record header announcing more) a closed connection, at
// once (within the header bound on a loaded machine).
func tlsGarbage(ctx context.Context, p *agentProc, r *result) {
	var i atomic.Int64
	parallel(ctx, 2, func() {
		junk := make([]byte, 4096)
		_, _ = rand.Read(junk)
		want := ""
		switch i.Add(1) % 3 {
		case 0:
			junk, want = []byte(request("GET", "/whoami", "Bearer "+p.token, "")), "400 Bad Request"
		case 1:
			junk[0] = 0x42 // no TLS record type
		case 2:
			copy(junk, []byte{0x16, 0x03, 0x01, 0x40, 0x00}) // a handshake record of 16 KiB, cut short
		}
		t0 := time.Now()
		got, err := sendRaw(p.addr, junk)
		problem := ""
		switch {
		case err != nil:
			problem = "error: " + err.Error()
		case !strings.Contains(got, want):
			problem = fmt.Sprintf("answered %q, want %q", got, want)
		case time.Since(t0) > headerBound:
			problem = fmt.Sprintf("connection still open after %v", headerBound)
		}
		r.add(time.Since(t0), problem)
	})
}

// sendRaw writes b on a new TCP connection, ends its sending side and returns what came back
// until the agent closed it.
func sendRaw(addr string, b []byte) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 30*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.Write(b); err != nil {
		return "", err
	}
	_ = c.(*net.TCPConn).CloseWrite()
	got, err := io.ReadAll(c)
	if err != nil && !isReset(err) {
		return string(got), err
	}
	return string(got), nil
}

// isReset is a connection the peer reset: how a server may close one it did not read whole.
func isReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "connection reset by peer")
}
