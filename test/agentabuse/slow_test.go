package agentabuse

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// slowKind is one way of holding a connection without finishing a request, and how soon the
// agent must close it.
type slowKind struct {
	name string
	// tls makes the client complete the TLS handshake before it starts.
	tls bool
	// head is sent at once; trickle then goes a byte a second, forever.
	head, trickle string
	within        time.Duration
}

// The agent's bounds (internal/external): a request's header within 10 s, its body within
// 10 s more, and 30 s idle between requests; 15 s of slack for a loaded machine (two cores
// shared with the abusers), on which the agent may accept a connection seconds after the
// client made it.
const (
	headerBound = 10*time.Second + 15*time.Second
	bodyBound   = 10*time.Second + 15*time.Second
	idleBound   = 30*time.Second + 15*time.Second
)

// slowKinds are the slow clients: one that never starts the TLS handshake, one that never
// ends its header, two that never end their body (with the token and without), and one that
// keeps a connection open after its request.
func slowKinds(p *agentProc) []slowKind {
	body := func(auth string) string {
		return fmt.Sprintf("POST /servers HTTP/1.1\r\nHost: agent\r\nAuthorization: %s\r\nContent-Length: 1000\r\n\r\n[", auth)
	}
	return []slowKind{
		{name: "no TLS handshake", within: headerBound},
		{name: "header never ends", tls: true, head: "GET /whoami HTTP/1.1\r\nHost: agent\r\n", trickle: "X-Slow: 1\r\n", within: headerBound},
		{name: "body never ends (token)", tls: true, head: body("Bearer " + p.token), trickle: " ", within: bodyBound},
		{name: "body never ends (no token)", tls: true, head: body("Bearer wrong"), trickle: " ", within: bodyBound},
		{name: "idle after a request", tls: true, head: "GET /whoami HTTP/1.1\r\nHost: agent\r\nAuthorization: Bearer " + p.token + "\r\n\r\n", within: idleBound},
	}
}

// slowClients holds n connections of kind k open, reopening each when the agent closes it,
// until ctx ends; each must be closed by the agent within k.within of its start.
func slowClients(ctx context.Context, p *agentProc, k slowKind, n int, r *result) {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for ctx.Err() == nil {
				t0, err := holdSlow(p, k)
				problem := ""
				if d := time.Since(t0); err != nil {
					problem = "error: " + err.Error()
				} else if d > k.within {
					problem = fmt.Sprintf("open %v, want closed within %v", d.Round(time.Second), k.within)
				}
				r.add(time.Since(t0), problem)
			}
		})
	}
	wg.Wait()
}

// holdSlow opens one slow connection and returns once the agent closed it (or after twice
// the bound, which the caller reports), and when the slow part began: once the connection
// was made, its TLS handshake done and the head of the request sent.
func holdSlow(p *agentProc, k slowKind) (time.Time, error) {
	raw, err := net.DialTimeout("tcp", p.addr, 30*time.Second)
	if err != nil {
		return time.Now(), err
	}
	defer raw.Close()
	t0 := time.Now()
	_ = raw.SetDeadline(t0.Add(30*time.Second + 2*k.within))
	c := raw
	if k.tls {
		tc := tls.Client(raw, p.tls)
		if err := tc.Handshake(); err != nil {
			return t0, closedByAgent(err) // its handshake timeout, on a loaded machine
		}
		c = tc
	}
	if _, err := io.WriteString(c, k.head); err != nil {
		return t0, closedByAgent(err)
	}
	t0 = time.Now()
	closed := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, c)
		closed <- closedByAgent(err)
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case err := <-closed:
			return t0, err
		case <-tick.C:
			if k.trickle != "" {
				_, _ = io.WriteString(c, k.trickle) // fails once the agent closed it
			}
		}
	}
}

// closedByAgent is nil for the errors of a connection the agent closed (reset, broken pipe,
// end of file in a TLS handshake) and names one still open at its deadline.
func closedByAgent(err error) error {
	var ne net.Error
	switch {
	case err == nil || isReset(err) || errors.Is(err, syscall.EPIPE) || errors.Is(err, io.EOF):
		return nil
	case errors.As(err, &ne) && ne.Timeout():
		return errors.New("still open at the client's deadline")
	}
	return err
}

// burst opens n connections at once, each sending a request with the token, keeps them all
// open until the last was answered, then closes them; again after a second, until ctx ends.
// The note is the slowest burst's wall time.
func burst(ctx context.Context, p *agentProc, n int, r *result) {
	var slowest time.Duration
	var dropped atomic.Int64
	for ctx.Err() == nil {
		t0 := time.Now()
		var answered, wg sync.WaitGroup
		answered.Add(n)
		release := make(chan struct{})
		for range n {
			wg.Go(func() {
				c0 := time.Now()
				c, err := whoamiKept(p)
				if closedByAgent(err) == nil && err != nil {
					dropped.Add(1) // its handshake or header took longer than the agent allows
					err = nil
				}
				r.add(time.Since(c0), errText(err))
				answered.Done()
				<-release
				if c != nil {
					c.Close()
				}
			})
		}
		answered.Wait()
		slowest = max(slowest, time.Since(t0))
		close(release)
		wg.Wait()
		pause(ctx, 3*time.Second)
	}
	r.note = fmt.Sprintf("slowest burst of %d answered in %v, %d connections closed by the agent unanswered", n, slowest.Round(time.Millisecond), dropped.Load())
	if r.n > 0 && dropped.Load()*20 > int64(r.n) {
		r.add(0, fmt.Sprintf("%d of %d connections closed unanswered, want under 5%%", dropped.Load(), r.n))
	}
}

// errText is an error's text, or "" for none.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// whoamiKept asks for the source address on a new kept-alive connection and returns it open.
func whoamiKept(p *agentProc) (net.Conn, error) {
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 30 * time.Second}, "tcp", p.addr, p.tls)
	if err != nil {
		return nil, err
	}
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, "GET /whoami HTTP/1.1\r\nHost: agent\r\nAuthorization: Bearer "+p.token+"\r\n\r\n"); err != nil {
		return c, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return c, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if problem := check(resp.StatusCode, strings.TrimSpace(string(b)), err, 200, "127.0.0.1"); problem != "" {
		return c, errors.New(problem)
	}
	return c, nil
}
