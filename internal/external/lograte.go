package external

import (
	"fmt"
	"io"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Bounds of the HTTP server's error log: a burst of lines, then one a second.
const (
	errorLogBurst = 20
	errorLogEvery = time.Second
)

// rateLimitedLog passes a burst of lines to w, then one per interval, and counts the lines it
// leaves out, saying how many before the next line it passes. The HTTP server logs a line per
// failed TLS handshake or malformed request, and whoever can open connections to the agent
// could otherwise fill the operator's terminal or disk with them.
type rateLimitedLog struct {
	mu      sync.Mutex
	w       io.Writer
	lim     *rate.Limiter
	now     func() time.Time
	dropped int
}

func newRateLimitedLog(w io.Writer, every time.Duration, burst int) *rateLimitedLog {
	return &rateLimitedLog{w: w, lim: rate.NewLimiter(rate.Every(every), burst), now: time.Now}
}

// Write passes p, a line of log.Logger's, or counts it as left out.
func (l *rateLimitedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.lim.AllowN(l.now(), 1) {
		l.dropped++
		return len(p), nil
	}
	if l.dropped > 0 {
		if _, err := fmt.Fprintf(l.w, "(%d lines of the server's errors left out: more than %d a second)\n", l.dropped, int(time.Second/errorLogEvery)); err != nil {
			return 0, err
		}
		l.dropped = 0
	}
	return l.w.Write(p)
}
