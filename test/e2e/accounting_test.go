//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/agent"
	"github.com/cnibench/cnibench/internal/monitor"
)

// TestCPUAccountingKnownLoad runs a spinner of known duty (one core, busy all the time, for
// 3 s) through the agent's tool runner, whose window readings the runner turns into host CPU,
// and an idle command of the same length for the background: the difference must be 3
// CPU-seconds within 10 %, and busy plus steal can never exceed all the CPUs' time.
func TestCPUAccountingKnownLoad(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	window := func(argv ...string) monitor.Usage {
		t.Helper()
		rep, err := agent.Run(ctx, agent.RunOptions{Argv: argv})
		if err != nil || rep.ExitCode != 124 && rep.ExitCode != 0 {
			t.Fatalf("%v: exit %d, %v: %s", argv, rep.ExitCode, err, rep.Stderr)
		}
		if rep.Window == nil {
			t.Fatalf("%v: no window readings", argv)
		}
		u, err := monitor.Delta(rep.Window.Before, rep.Window.After)
		if err != nil {
			t.Fatal(err)
		}
		if u.CPUBusyPct+u.StealPct > 100+1e-9 {
			t.Errorf("%v: busy %.1f %% + steal %.1f %% exceed all the CPUs' time", argv, u.CPUBusyPct, u.StealPct)
		}
		return u
	}
	idle := window("sleep", "3")
	spin := window("timeout", "3", "sh", "-c", "while :; do :; done")
	got := spin.CPUSeconds - idle.CPUSeconds
	t.Logf("spinner window %.2f s: %.2f CPU-s busy (%.0f %%), steal %.1f %%; idle window %.2f s: %.2f CPU-s",
		spin.WallSeconds, spin.CPUSeconds, spin.CPUBusyPct, spin.StealPct, idle.WallSeconds, idle.CPUSeconds)
	// The spinner ran as long as its window, minus process start: its duty over the window.
	want := spin.WallSeconds
	if got < 0.9*want || got > 1.1*want {
		t.Errorf("the spinner's CPU time came out %.2f CPU-s over the background, want %.2f within 10 %%", got, want)
	}
}
