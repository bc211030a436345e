package agent

import (
	"testing"
	"time"
)

// TestKeepAwake spins two threads for 300 ms: their CPU time is counted, at most the wall
// time each (one thread cannot use more than one CPU), and they run at the lowest class.
func TestKeepAwake(t *testing.T) {
	a := KeepAwake(2)
	time.Sleep(300 * time.Millisecond)
	secs, policy := a.Stop()
	if secs <= 0.05 || secs > 2*0.35 {
		t.Errorf("two spinners over 300 ms used %.3f CPU-s, want above 0.05 and at most 0.7", secs)
	}
	if policy != "sched_idle" {
		t.Errorf("policy %q, want sched_idle", policy)
	}
	if secs, policy := KeepAwake(0).Stop(); secs != 0 || policy != "none" {
		t.Errorf("no spinners: %v %q", secs, policy)
	}
}
