package agent

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/testsupport/fuzzcheck"
)

// FuzzStartTime reads the release line the runner writes to a client's standard input: an
// error quotes the line, and an accepted start is never more than maxStartDelay away.
func FuzzStartTime(f *testing.F) {
	for _, s := range []string{"go\n", "go " + strconv.FormatInt(time.Now().UnixNano(), 10) + "\n", "go 99999999999999999999\n", "stop\n", "go 1 2\n", "go -9223372036854775808"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		var at time.Time
		var err error
		fuzzcheck.Within(t, "startTime", func() { at, err = startTime(line) })
		if err != nil {
			fuzzcheck.Names(t, err, "barrier: ")
			return
		}
		if wait := time.Until(at); wait > maxStartDelay {
			t.Fatalf("startTime(%q) = %s, %s away", line, at, wait)
		}
	})
}

// FuzzReadSockperfLog reads sockperf's --full-log file of round trips: an error names the file
// and the value it refused.
func FuzzReadSockperfLog(f *testing.F) {
	f.Add("------------------------------\npacket, txTime(sec), rxTime(sec), rtt(usec)\n1, 1.000000001, 1.000014001, 14.000\n2, 1.1, 1.100013, 13.000\n")
	f.Add("packet, txTime(sec), rxTime(sec), rtt(usec)\n1, 1, 1, NaN\n2, 1, 1, -5\n3, 1, 1, 1e400\n")
	f.Add("packet, rtt(usec)\n1,2,3\n")
	f.Fuzz(func(t *testing.T, text string) {
		path := filepath.Join(t.TempDir(), "rtt.log")
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		var err error
		fuzzcheck.Within(t, "readSockperfLog", func() { _, err = readSockperfLog(path) })
		if err != nil {
			fuzzcheck.Names(t, err, "read sockperf log "+path)
		}
	})
}
