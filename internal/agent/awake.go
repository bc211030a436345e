package agent

import (
	"runtime"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Awake keeps CPUs out of idle while a request/response tool runs. On a VM an idle vCPU halts,
// and waking it for each message costs tens of microseconds of the hypervisor's time: more
// than the datapath a latency sample is meant to measure, and varying with whatever else the
// machine does. Spinners at the lowest scheduling class (SCHED_IDLE, nice 19 where that is
// refused) keep each CPU running; a woken tool preempts them at once, so the wake-up left
// in the figure is the kernel's, not the hypervisor's. Their CPU time is counted so that the
// sample's CPU costs can leave it out.
type Awake struct {
	stop    atomic.Bool
	wg      sync.WaitGroup
	mu      sync.Mutex
	seconds float64
	policy  string
}

// KeepAwake starts n spinners; Stop ends them. n <= 0 starts none.
func KeepAwake(n int) *Awake {
	a := &Awake{policy: "none"}
	for range max(n, 0) {
		a.wg.Add(1)
		go a.spin()
	}
	return a
}

func (a *Awake) spin() {
	defer a.wg.Done()
	// The thread is dedicated to the spinner and gets its scheduling class; it is never
	// unlocked, so the runtime discards it at the end instead of reusing it at that class.
	runtime.LockOSThread()
	policy := "sched_idle"
	if err := unix.SchedSetAttr(0, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_IDLE}, 0); err != nil {
		policy = "nice 19"
		if err := unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), 19); err != nil {
			// At the tool's own priority a spinner would take its CPU: better none
			// (a sandbox such as gVisor may refuse both).
			a.mu.Lock()
			a.policy = "refused"
			a.mu.Unlock()
			return
		}
	}
	// The thread may have run other goroutines before: its CPU clock counts from here.
	start := threadCPU()
	for !a.stop.Load() {
	}
	used := threadCPU() - start
	a.mu.Lock()
	a.seconds += used
	a.policy = policy
	a.mu.Unlock()
}

// Stop ends the spinners and returns the CPU time they used and their scheduling class.
func (a *Awake) Stop() (seconds float64, policy string) {
	a.stop.Store(true)
	a.wg.Wait()
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.seconds, a.policy
}

// threadCPU is the calling thread's CPU time in seconds.
func threadCPU() float64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return float64(ts.Nano()) / 1e9
}
