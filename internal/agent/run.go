package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/agentcmd"
	"github.com/cnibench/cnibench/internal/monitor"
	"github.com/cnibench/cnibench/internal/stats"
)

// RunOptions configure `cnibench agent run`, which runs one client tool for the runner: at a
// barrier shared with the other pairs of a sample, timed on the node's clock, and with the
// tool's per-transaction log turned into a histogram.
type RunOptions struct {
	Argv []string
	// Barrier makes the run wait for a line on In after printing agentcmd.ReadyLine on Err, so that
	// every client of a sample starts within a bounded skew of the others.
	Barrier bool
	// RTTLog is a sockperf --full-log file the tool writes; its round trips become the
	// report's histogram and the file is removed.
	RTTLog string
	In     io.Reader
	Err    io.Writer
	// KeepAwake, when positive, is the number of pairs sharing the node: the run keeps its
	// share of the node's CPUs (CPUs/KeepAwake, rounded up) out of idle while the tool runs
	// (see Awake).
	KeepAwake int
}

// stderrKeep bounds the tool's stderr kept in the report.
const stderrKeep = 4096

// Run runs the tool once and returns its report; an error means the tool could not be run
// at all (or the barrier was abandoned), not that it failed.
func Run(ctx context.Context, o RunOptions) (agentcmd.RunReport, error) {
	if len(o.Argv) == 0 {
		return agentcmd.RunReport{}, errors.New("run: expected a command after --")
	}
	if o.Barrier {
		if err := waitBarrier(ctx, o.In, o.Err); err != nil {
			return agentcmd.RunReport{}, err
		}
	}
	if o.RTTLog != "" {
		_ = os.Remove(o.RTTLog) // a stale log from an earlier sample would be read as this one's
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, o.Argv[0], o.Argv[1:]...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// The tool starts first, at the released time: reading the counters and starting the
	// spinners before it would delay the clients of a sample by different amounts (ten of them
	// on two CPUs spread their starts over 160 ms). The readings then miss the first
	// millisecond of the tool, and cost about a millisecond of this process inside the window.
	rep := agentcmd.RunReport{StartNS: time.Now().UnixNano()}
	var awake *Awake
	err := cmd.Start()
	if err == nil {
		before, beforeErr := monitor.Read()
		if o.KeepAwake > 0 {
			awake = KeepAwake((runtime.NumCPU() + o.KeepAwake - 1) / o.KeepAwake)
		}
		err = cmd.Wait()
		rep.EndNS = time.Now().UnixNano()
		if after, afterErr := monitor.Read(); beforeErr == nil && afterErr == nil {
			rep.Window = &agentcmd.Window{Before: before, After: after}
		}
	} else {
		rep.EndNS = time.Now().UnixNano()
	}
	if awake != nil {
		secs, policy := awake.Stop()
		if rep.Window != nil {
			rep.Window.AwakeSeconds, rep.Window.AwakePolicy = secs, policy
		}
	}
	rep.Stdout, rep.Stderr = stdout.String(), tail(stderr.String(), stderrKeep)
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		rep.ExitCode = exitErr.ExitCode()
	case err != nil:
		return rep, fmt.Errorf("run %s: %w", o.Argv[0], err)
	}
	if o.RTTLog != "" && rep.ExitCode == 0 {
		h, err := readSockperfLog(o.RTTLog)
		_ = os.Remove(o.RTTLog)
		if err != nil {
			return rep, err
		}
		rep.Histogram = h
	}
	return rep, nil
}

// maxStartDelay bounds how far in the future a release may schedule the start.
const maxStartDelay = 30 * time.Second

// waitBarrier announces that the client is ready and waits for the release line, "go" or
// "go UNIX_NS": with a time, the start waits for it. Releasing every client with one start time
// lets them start together even when the first to start would otherwise take the CPU from the
// ones still being released.
func waitBarrier(ctx context.Context, in io.Reader, errOut io.Writer) error {
	if in == nil {
		return errors.New("barrier: no standard input to be released through")
	}
	if _, err := fmt.Fprintln(errOut, agentcmd.ReadyLine); err != nil {
		return fmt.Errorf("barrier: announce ready: %w", err)
	}
	type release struct {
		text string
		err  error
	}
	line := make(chan release, 1)
	go func() {
		text, err := bufio.NewReader(in).ReadString('\n')
		line <- release{text, err}
	}()
	var rel release
	select {
	case <-ctx.Done():
		return ctx.Err()
	case rel = <-line:
	}
	if rel.err != nil {
		return fmt.Errorf("barrier: standard input closed before the release: %w", rel.err)
	}
	at, err := startTime(rel.text)
	if err != nil {
		return err
	}
	if wait := time.Until(at); wait > 0 {
		return sleepCtx(ctx, wait)
	}
	return nil
}

// startTime reads a release line: "go" starts now, "go UNIX_NS" at that time.
func startTime(line string) (time.Time, error) {
	f := strings.Fields(line)
	if len(f) == 0 || f[0] != "go" || len(f) > 2 {
		return time.Time{}, fmt.Errorf("barrier: release %q: expected \"go\" or \"go UNIX_NS\"", strings.TrimSpace(line))
	}
	if len(f) == 1 {
		return time.Now(), nil
	}
	ns, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("barrier: release %q: start time: %w", strings.TrimSpace(line), err)
	}
	at := time.Unix(0, ns)
	if time.Until(at) > maxStartDelay {
		return time.Time{}, fmt.Errorf("barrier: start time %s is more than %s away: are the clocks of this node and the runner apart?", at.UTC().Format(time.RFC3339Nano), maxStartDelay)
	}
	return at, nil
}

// readSockperfLog reads the round trips of a sockperf --full-log file: after a header line
// "packet, txTime(sec), rxTime(sec), rtt(usec)", one "N, TX, RX, RTT" line per observation.
func readSockperfLog(path string) (*stats.Hist, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read sockperf log: %w", err)
	}
	defer f.Close()
	h := stats.NewHist()
	sc := bufio.NewScanner(f)
	header := false
	for sc.Scan() {
		line := sc.Text()
		if !header {
			header = strings.HasPrefix(line, "packet,") && strings.Contains(line, "rtt(usec)")
			continue
		}
		fields := strings.Split(line, ",")
		if len(fields) != 4 {
			continue
		}
		rtt, err := strconv.ParseFloat(strings.TrimSpace(fields[3]), 64)
		if err != nil {
			return nil, fmt.Errorf("read sockperf log %s: rtt %q: %w", path, fields[3], err)
		}
		// A round trip below the log's 1 ns resolution still happened.
		if err := h.Add(max(rtt, 0.001)); err != nil {
			return nil, fmt.Errorf("read sockperf log %s: %w", path, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read sockperf log %s: %w", path, err)
	}
	if !header || h.Count() == 0 {
		return nil, fmt.Errorf("read sockperf log %s: no round trips (header found: %v)", path, header)
	}
	return h, nil
}

// WriteReport prints the report as one line of JSON.
func WriteReport(w io.Writer, r agentcmd.RunReport) error {
	if err := json.NewEncoder(w).Encode(r); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
