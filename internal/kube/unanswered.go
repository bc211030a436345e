package kube

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// unansweredAfter is how long a request must have waited for the API server's answer, when
// its deadline passes, to count as one the server did not answer: a reachable server answers
// in milliseconds (an exec's upgrade once the kubelet has started the command).
const unansweredAfter = 5 * time.Second

// unanswered notes the requests whose deadline passed before the API server answered them.
// Such a request fails with its caller's deadline, which says nothing of the server: a request
// sent just before the network dropped the server's replies waits with nothing unacknowledged,
// so TCP never gives the connection up (userTimeout), and an exec's upgrade then fails as a
// command that hung would. The note (Client.NoteLostConnection) is what tells the two apart.
type unanswered struct {
	next  http.RoundTripper
	note  func(what string)
	after time.Duration // unansweredAfter
}

// RoundTrip sends the request and notes it if its deadline passes first.
func (u unanswered) RoundTrip(req *http.Request) (*http.Response, error) {
	sent := time.Now()
	stop := context.AfterFunc(req.Context(), func() {
		waited := time.Since(sent)
		if errors.Is(req.Context().Err(), context.DeadlineExceeded) && waited >= u.after {
			u.note(fmt.Sprintf("the server did not answer %s %s in %.0fs", req.Method, req.URL.Path, waited.Seconds()))
		}
	})
	defer stop()
	return u.next.RoundTrip(req)
}

// watchAnswers wraps a client's transports (rest.Config.WrapTransport) so that requests the
// API server left unanswered are noted on c.
func (c *Client) watchAnswers(rt http.RoundTripper) http.RoundTripper {
	return unanswered{next: rt, note: c.NoteLostConnection, after: unansweredAfter}
}
