package agent

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/agentcmd"
)

func TestRunWaitsAtTheBarrier(t *testing.T) {
	inR, inW := io.Pipe()
	errR, errW := io.Pipe()
	done := make(chan agentcmd.RunReport, 1)
	go func() {
		rep, err := Run(context.Background(), RunOptions{Argv: []string{"echo", "hello"}, Barrier: true, In: inR, Err: errW})
		if err != nil {
			t.Error(err)
		}
		done <- rep
	}()
	buf := make([]byte, len(agentcmd.ReadyLine)+1)
	if _, err := io.ReadFull(errR, buf); err != nil || strings.TrimSpace(string(buf)) != agentcmd.ReadyLine {
		t.Fatalf("ready line %q, %v", buf, err)
	}
	select {
	case <-done:
		t.Fatal("ran before the release")
	case <-time.After(200 * time.Millisecond):
	}
	at := time.Now().Add(150 * time.Millisecond).UnixNano()
	if _, err := io.WriteString(inW, "go "+strconv.FormatInt(at, 10)+"\n"); err != nil {
		t.Fatal(err)
	}
	rep := <-done
	if rep.Stdout != "hello\n" || rep.ExitCode != 0 {
		t.Errorf("report %+v", rep)
	}
	if rep.StartNS < at || rep.StartNS > at+int64(500*time.Millisecond) || rep.EndNS < rep.StartNS {
		t.Errorf("start %d, want at the release's start time %d (within 500 ms on a loaded machine); end %d", rep.StartNS, at, rep.EndNS)
	}
}

func TestRunRefusesABadRelease(t *testing.T) {
	for _, line := range []string{"stop\n", "go soon\n", "go " + strconv.FormatInt(time.Now().Add(time.Hour).UnixNano(), 10) + "\n"} {
		_, err := Run(context.Background(), RunOptions{Argv: []string{"true"}, Barrier: true, In: strings.NewReader(line), Err: io.Discard})
		if err == nil || !strings.Contains(err.Error(), "barrier: ") {
			t.Errorf("release %q: err = %v", line, err)
		}
	}
}

func TestRunAbandonedBarrierFails(t *testing.T) {
	_, err := Run(context.Background(), RunOptions{Argv: []string{"true"}, Barrier: true, In: strings.NewReader(""), Err: io.Discard})
	if err == nil || !strings.Contains(err.Error(), "before the release") {
		t.Errorf("err = %v", err)
	}
}

func TestRunReportsExitCodeAndSockperfLog(t *testing.T) {
	rep, err := Run(context.Background(), RunOptions{Argv: []string{"sh", "-c", "echo oops >&2; exit 3"}})
	if err != nil || rep.ExitCode != 3 || rep.Stderr != "oops\n" {
		t.Errorf("report %+v, err %v", rep, err)
	}
	log := filepath.Join(t.TempDir(), "full.csv")
	// The shape of sockperf 3.7's --full-log: a summary, then one line per round trip.
	script := `printf 'sockperf: [Total Run] RunTime=1.000 sec\n------------------------------\npacket, txTime(sec), rxTime(sec), rtt(usec)\n0, 2.4, 2.4, 8.450\n1, 2.4, 2.4, 9.016\n2, 2.4, 2.4, 30.5\n' > ` + log
	rep, err = Run(context.Background(), RunOptions{Argv: []string{"sh", "-c", script}, RTTLog: log})
	if err != nil {
		t.Fatal(err)
	}
	if h := rep.Histogram; h == nil || h.Count() != 3 || h.Quantile(100) < 30 || h.Quantile(1) > 8.5 {
		t.Fatalf("histogram %+v", h)
	}
	if _, err := os.Stat(log); !os.IsNotExist(err) {
		t.Errorf("log not removed: %v", err)
	}
	if _, err := Run(context.Background(), RunOptions{Argv: []string{"true"}, RTTLog: log}); err == nil {
		t.Error("a missing log is not an error")
	}
}
