package store

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/record"
)

// childOwner starts a process and returns it with its owner record.
func childOwner(t *testing.T) (*exec.Cmd, record.Owner) {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	o, err := record.ProcessOwner(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return cmd, o
}

func TestOwnerColumn(t *testing.T) {
	_, o := childOwner(t)
	if d := decodeOwner(encodeOwner(o)); d != o {
		t.Errorf("owner round trip: %+v, want %+v", d, o)
	}
}

func TestMarkInterrupted(t *testing.T) { forEachBackend(t, testMarkInterrupted) }

func testMarkInterrupted(t *testing.T, b backend) {
	ctx := context.Background()
	d := openTest(t, b)
	me, err := record.CurrentOwner()
	if err != nil {
		t.Fatal(err)
	}
	child, dead := childOwner(t)
	_ = child.Process.Kill()
	_ = child.Wait()
	runs := map[string]record.Owner{"killed": dead, "alive": me, "elsewhere": {Host: "other", BootID: "x", PID: 1, Start: 1}}
	for id, o := range runs {
		r := testRun(id, t0())
		r.Owner = o
		if err := d.CreateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
		if err := d.AddTarget(ctx, record.Target{RunID: id, Name: "a"}); err != nil {
			t.Fatal(err)
		}
	}
	last := t0().Add(42 * time.Second)
	for i, at := range []time.Time{t0().Add(time.Second), last} {
		if err := d.AddSample(ctx, record.Sample{RunID: "killed", Seq: i, Target: "a", Workload: "tcp-stream/1", Started: at,
			Metrics: map[string]float64{"throughput_gbps": 1}}); err != nil {
			t.Fatal(err)
		}
	}
	if r, err := d.Run(ctx, "killed"); err != nil || !r.Interrupted() {
		t.Errorf("killed run before marking: interrupted=%v, %v", r.Interrupted(), err)
	}
	marked, err := d.MarkInterrupted(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(marked) != 1 || marked[0].ID != "killed" {
		t.Fatalf("marked %+v, want only the killed run", marked)
	}
	r, err := d.Run(ctx, "killed")
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != record.StatusPartial || !r.Interrupted() || !strings.Contains(r.Note, dead.String()) || !r.Finished.Equal(last) {
		t.Errorf("killed run after marking: status %s, note %q, finished %v (want %v)", r.Status, r.Note, r.Finished, last)
	}
	if s, err := d.Samples(ctx, "killed"); err != nil || len(s) != 2 {
		t.Errorf("the killed run's samples: %d, %v", len(s), err)
	}
	for _, id := range []string{"alive", "elsewhere"} {
		if r, err := d.Run(ctx, id); err != nil || r.Status != record.StatusRunning || r.Interrupted() {
			t.Errorf("run %s: status %s, interrupted %v, %v", id, r.Status, r.Interrupted(), err)
		}
	}
	if again, err := d.MarkInterrupted(ctx); err != nil || len(again) != 0 {
		t.Errorf("marking again: %+v, %v", again, err)
	}
}
