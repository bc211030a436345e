// Package progress prints the status lines of cnibench's long commands (a cluster's create, a
// run): each line whole, even from parallel steps, and stamped with the time since the
// command began, in one format for all of them.
package progress

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// Log writes status lines to an output.
type Log struct {
	mu    sync.Mutex
	out   io.Writer
	began time.Time
}

// New returns a Log whose lines count from began.
func New(out io.Writer, began time.Time) *Log {
	if out == nil {
		out = io.Discard
	}
	return &Log{out: out, began: began}
}

// Printf writes one line: "[  12.3s] " and the formatted text.
func (l *Log) Printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.out, "[%6.1fs] %s\n", time.Since(l.began).Seconds(), fmt.Sprintf(format, args...))
}
