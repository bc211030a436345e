// Package testsupport holds helpers for tests that measure on a real machine.
package testsupport

import (
	"os/exec"
	"runtime"
	"syscall"
	"testing"
)

// KeepCPUsAwake runs one lowest-priority busy loop per CPU until the test ends. On an idle
// virtual machine a process that sleeps in the kernel between request and response (sockperf)
// pays a vCPU halt and wake-up on every exchange, while one that spins a moment first (a Go
// program) does not: the same loopback round trip then measures 55 us in one tool and 19 us in
// the other, though under load they agree within a few percent. Keeping the CPUs out of idle
// makes a comparison of two tools compare what they measure. At nice 19 the loops give way to
// the tools whenever these want a CPU.
func KeepCPUsAwake(t testing.TB) {
	t.Helper()
	var cmds []*exec.Cmd
	for i := 0; i < runtime.NumCPU(); i++ {
		cmd := exec.Command("nice", "-n", "19", "sh", "-c", "while :; do :; done")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatalf("start busy loop: %v", err)
		}
		cmds = append(cmds, cmd)
	}
	t.Cleanup(func() {
		for _, c := range cmds {
			_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
			_ = c.Wait()
		}
	})
}
