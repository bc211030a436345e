package record

import (
	"os/exec"
	"testing"
)

// childOwner starts a process and returns it with its owner.
func childOwner(t *testing.T) (*exec.Cmd, Owner) {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	me, err := CurrentOwner()
	if err != nil {
		t.Fatal(err)
	}
	start, err := processStart(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return cmd, Owner{Host: me.Host, BootID: me.BootID, PID: cmd.Process.Pid, Start: start}
}

func TestOwnerLiveness(t *testing.T) {
	cmd, o := childOwner(t)
	if got := o.Liveness(); got != OwnerAlive {
		t.Fatalf("running child %+v: %s", o, got)
	}
	reused := o
	reused.Start++ // the same pid, another process
	if got := reused.Liveness(); got != OwnerDead {
		t.Errorf("pid reused by another process: %s, want dead", got)
	}
	rebooted := o
	rebooted.BootID = "00000000-0000-0000-0000-000000000000"
	if got := rebooted.Liveness(); got != OwnerDead {
		t.Errorf("another boot: %s, want dead", got)
	}
	elsewhere := o
	elsewhere.Host += "-elsewhere"
	if got := elsewhere.Liveness(); got != OwnerUnknown {
		t.Errorf("another host: %s, want unknown", got)
	}
	if got := (Owner{}).Liveness(); got != OwnerUnknown {
		t.Errorf("no owner: %s, want unknown", got)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if got := o.Liveness(); got != OwnerDead {
		t.Errorf("killed child: %s, want dead", got)
	}
	if p, err := ProcessOwner(o.PID); err == nil {
		t.Errorf("owner of the killed child: %+v, want an error", p)
	}
}
