package profile

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Frequency is the sampling rate per CPU: a prime, so that the sampling never runs in step
// with a periodic timer of the workload or the kernel, and about a thousand samples a
// second on two CPUs, enough for a function with 2 % of them to show in a one-second window.
const Frequency = 497

// Recorder samples every CPU of the host with perf's software CPU clock (a VM without
// hardware counters has it too), with kernel and user call graphs.
type Recorder struct {
	Perf string // the perf program; empty looks "perf" up in PATH
	// Dir is where perf.data files live while they are folded; empty is the system's temp
	// dir. A local cluster's state directory, so that what a killed run left goes with it.
	Dir string
}

// Check says whether profiles can be recorded here: perf present and allowed to sample the
// whole host.
func (r Recorder) Check(ctx context.Context) error {
	perf, err := r.perf()
	if err != nil {
		return err
	}
	rec, err := r.Start(ctx)
	if err != nil {
		return err
	}
	if err := rec.Enable(); err != nil {
		rec.abort()
		return fmt.Errorf("%s cannot sample the host's CPUs: %w", perf, err)
	}
	time.Sleep(20 * time.Millisecond) // a few samples' worth: the check must see perf record
	if _, err := rec.Stop(ctx); err != nil {
		return fmt.Errorf("%s cannot sample the host's CPUs: %w", perf, err)
	}
	return nil
}

func (r Recorder) perf() (string, error) {
	name := r.Perf
	if name == "" {
		name = "perf"
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("CPU profiles need perf (Debian package linux-perf; scripts/setup.sh installs it): %w", err)
	}
	return path, nil
}

// Recording is a perf record started with its sampling off, turned on for a sample's
// measured window through its control pipe: perf needs about a quarter of a second to set up
// (here), which must not come out of the window.
type Recording struct {
	perf    string
	dir     string
	cmd     *exec.Cmd
	stderr  bytes.Buffer
	ctl     *os.File      // commands to perf
	acks    *bufio.Reader // its acknowledgements
	ackFile *os.File
	pending int // acknowledgements owed for commands already sent (the setup's ping)
	enabled time.Time
	window  time.Duration
}

// ackTimeout bounds the wait for perf to acknowledge a command: its setup, on a loaded host.
const ackTimeout = 30 * time.Second

// Start launches perf with sampling off and returns at once; Enable turns sampling on.
// The build-id cache is off: perf would otherwise copy every binary it saw into ~/.debug.
func (r Recorder) Start(ctx context.Context) (*Recording, error) {
	perf, err := r.perf()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(r.Dir, "cnb-perf-")
	if err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	rec := &Recording{perf: perf, dir: dir}
	if err := rec.start(ctx); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return rec, nil
}

func (rec *Recording) start(ctx context.Context) error {
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	ackR, ackW, err := os.Pipe()
	if err != nil {
		ctlR.Close()
		ctlW.Close()
		return fmt.Errorf("profile: %w", err)
	}
	// -D -1: start with every event disabled, until "enable" on the control pipe (fd 3; its
	// acknowledgements on fd 4). No build ids: collecting them at the end cost most of a second.
	rec.cmd = exec.CommandContext(ctx, rec.perf, "record", "-q", "--no-buildid-cache", "--no-buildid", "-D", "-1",
		"--control", "fd:3,4", "-F", strconv.Itoa(Frequency), "-a", "-g", "-o", rec.file())
	rec.cmd.ExtraFiles = []*os.File{ctlR, ackW}
	rec.cmd.Stderr = &rec.stderr
	// Cancelled, perf still writes what it has and exits; killed, it would leave a partial file.
	rec.cmd.Cancel = func() error { return rec.cmd.Process.Signal(os.Interrupt) }
	// perf has no workload to end with: if cnibench is killed, the kernel interrupts it.
	rec.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGINT}
	rec.cmd.WaitDelay = 5 * time.Second
	err = rec.cmd.Start()
	ctlR.Close()
	ackW.Close()
	if err != nil {
		ctlW.Close()
		ackR.Close()
		return fmt.Errorf("start %s record: %w", rec.perf, err)
	}
	rec.ctl, rec.ackFile, rec.acks = ctlW, ackR, bufio.NewReader(ackR)
	// Answered once perf is set up; Enable waits for it.
	if err := rec.send("ping"); err != nil {
		rec.abort()
		return err
	}
	return nil
}

func (rec *Recording) file() string { return filepath.Join(rec.dir, "perf.data") }

// send writes a command; its acknowledgement is read by the next await.
func (rec *Recording) send(command string) error {
	if _, err := io.WriteString(rec.ctl, command+"\n"); err != nil {
		return fmt.Errorf("%s record: control %s: %w: %s", rec.perf, command, err, lastLine(rec.stderr.String()))
	}
	rec.pending++
	return nil
}

// await reads every acknowledgement owed. perf ends each with a NUL, which the next read
// finds first.
func (rec *Recording) await() error {
	_ = rec.ackFile.SetReadDeadline(time.Now().Add(ackTimeout))
	for ; rec.pending > 0; rec.pending-- {
		line, err := rec.acks.ReadString('\n')
		if err != nil {
			return fmt.Errorf("%s record did not answer its control pipe: %w: %s", rec.perf, err, lastLine(rec.stderr.String()))
		}
		if strings.Trim(line, "\x00\n") != "ack" {
			return fmt.Errorf("%s record answered %q on its control pipe", rec.perf, line)
		}
	}
	return nil
}

// Enable turns sampling on, once perf is ready: from here the window runs.
func (rec *Recording) Enable() error {
	if err := rec.await(); err != nil {
		return err
	}
	if err := rec.send("enable"); err != nil {
		return err
	}
	err := rec.await()
	rec.enabled = time.Now()
	return err
}

// Stop turns sampling off, ends perf and folds what it recorded. Everything of the recording
// is removed whatever happens; a recording never enabled has no samples and says so.
func (rec *Recording) Stop(ctx context.Context) (Folded, error) {
	defer os.RemoveAll(rec.dir)
	var errs []error
	if !rec.enabled.IsZero() {
		rec.window = time.Since(rec.enabled)
		if err := rec.send("disable"); err == nil {
			errs = append(errs, rec.await())
		}
	}
	errs = append(errs, rec.end())
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if rec.enabled.IsZero() {
		return nil, errors.New("perf was never enabled: the sample ended before its window")
	}
	return rec.fold(ctx)
}

// end interrupts perf, which then writes its file and exits.
func (rec *Recording) end() error {
	defer rec.ctl.Close()
	defer rec.ackFile.Close()
	_ = rec.cmd.Process.Signal(os.Interrupt)
	err := rec.cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) && !exit.Exited() {
		err = nil // ended by the interrupt, as asked
	}
	if err != nil {
		return fmt.Errorf("%s record: %w: %s", rec.perf, err, lastLine(rec.stderr.String()))
	}
	return nil
}

// abort ends perf and removes its files, for a recording that failed to start.
func (rec *Recording) abort() {
	_ = rec.end()
	os.RemoveAll(rec.dir)
}

func (rec *Recording) fold(ctx context.Context) (Folded, error) {
	var out, stderr bytes.Buffer
	script := exec.CommandContext(ctx, rec.perf, "script", "-i", rec.file(), "-F", "comm,pid,ip,sym,dso")
	script.Stdout, script.Stderr = &out, &stderr
	if err := script.Run(); err != nil {
		return nil, fmt.Errorf("%s script: %w: %s", rec.perf, err, lastLine(stderr.String()))
	}
	text := out.String()
	f, err := FoldPerfScript(strings.NewReader(text))
	if err != nil {
		return nil, err
	}
	if f.Total() == 0 {
		return nil, fmt.Errorf("perf recorded no samples in %.2f s (perf script wrote %d bytes: %.120q; %s)",
			rec.window.Seconds(), len(text), text, lastLine(stderr.String()+"\n"+rec.stderr.String()))
	}
	return f, nil
}

// Window is how long sampling was on, once stopped.
func (rec *Recording) Window() time.Duration { return rec.window }

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
