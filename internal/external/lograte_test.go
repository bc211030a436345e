package external

import (
	"bytes"
	"log"
	"strings"
	"testing"
	"time"
)

// TestRateLimitedLog floods the server's error log as a client failing handshakes would: a
// burst passes, the rest is counted, and the count comes before the next line let through.
func TestRateLimitedLog(t *testing.T) {
	var out bytes.Buffer
	l := newRateLimitedLog(&out, time.Second, 3)
	now := time.Unix(0, 0)
	l.now = func() time.Time { return now }
	lg := log.New(l, "", 0)
	for i := range 1000 {
		lg.Printf("http: TLS handshake error %d", i)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || lines[2] != "http: TLS handshake error 2" {
		t.Fatalf("after a flood of 1000 lines at once, the log holds %d lines, want the burst of 3:\n%s", len(lines), out.String())
	}
	now = now.Add(time.Second)
	lg.Printf("http: TLS handshake error late")
	got := strings.Split(strings.TrimSpace(out.String()), "\n")[3:]
	want := []string{"(997 lines of the server's errors left out: more than 1 a second)", "http: TLS handshake error late"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("a second later the log goes on with\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
