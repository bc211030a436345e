package kube

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// startAsPID1 starts argv as the first process of a new PID namespace, as a container's main
// process runs.
func startAsPID1(t *testing.T, argv []string) (*exec.Cmd, <-chan error) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	return cmd, done
}

// TestExitOnTermAsPID1 runs the client's idle command and sockperf's server's wrapper as PID 1
// of a PID namespace: wrapped, SIGTERM ends them at once with status 0; unwrapped, sleep
// ignores it (which is why the wrapper exists); and a child that fails keeps its status.
func TestExitOnTermAsPID1(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for a PID namespace")
	}
	terminate := func(argv []string, within time.Duration) (exited bool, err error) {
		cmd, done := startAsPID1(t, argv)
		time.Sleep(300 * time.Millisecond) // let the shell set its trap
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			return true, err
		case <-time.After(within):
			_ = cmd.Process.Kill()
			<-done
			return false, nil
		}
	}
	if exited, err := terminate(exitOnTerm(clientIdle()), 5*time.Second); !exited || err != nil {
		t.Errorf("wrapped sleep as PID 1: exited %v, %v; want exit 0 at SIGTERM", exited, err)
	}
	if exited, _ := terminate(clientIdle(), time.Second); exited {
		t.Errorf("bare sleep as PID 1 left at SIGTERM: the wrapper is not what ends it")
	}
	_, done := startAsPID1(t, exitOnTerm([]string{"sleep", "not-a-duration"}))
	var exit *exec.ExitError
	if err := <-done; !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Errorf("a failing child: %v, want its non-zero status", err)
	}
	if got := exitOnTerm([]string{"iperf3", "-s"}); len(got) != 2 {
		t.Errorf("iperf3, which leaves at SIGTERM, was wrapped: %q", got)
	}
}
