package progress

import (
	"bytes"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestLinesWholeAndStamped(t *testing.T) {
	var buf bytes.Buffer
	l := New(&buf, time.Now().Add(-1500*time.Millisecond))
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() { defer wg.Done(); l.Printf("step %d of %s", i, strings.Repeat("x", 200)) }()
	}
	wg.Wait()
	line := regexp.MustCompile(`^\[ {3}\d\.\ds\] step \d+ of x{200}$`)
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 20 {
		t.Fatalf("%d lines, want 20:\n%s", len(lines), buf.String())
	}
	for _, s := range lines {
		if !line.MatchString(s) {
			t.Errorf("line %q is not one whole stamped line", s)
		}
	}
	New(nil, time.Now()).Printf("to nowhere") // a nil output discards
}
