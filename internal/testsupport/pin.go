package testsupport

import (
	"os"
	"runtime"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// PinToOneCPU confines this test process, every thread it has and every process it starts,
// to one CPU and one P until the test ends. Two ends of a loopback round trip that sleep
// between messages are woken either on the CPU that woke them, where the exchange costs about
// 14 us here, or on the other one, where each wake-up pays an inter-processor interrupt,
// which a virtual CPU takes as an exit to the hypervisor: 40 us. The scheduler picks between
// the two by load, so an unpinned tool's median moves between them from one run to the next
// and two tools cannot be compared. On one CPU both pay the same local wake-ups.
func PinToOneCPU(t testing.TB, cpu int) {
	t.Helper()
	var old unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		t.Fatalf("read CPU affinity: %v", err)
	}
	if !old.IsSet(cpu) {
		t.Skipf("CPU %d is not available to this process", cpu)
	}
	var one unix.CPUSet
	one.Set(cpu)
	procs := runtime.GOMAXPROCS(1)
	// The runtime may start a thread while the loop runs, inheriting the mask of the thread
	// that started it, so repeat until a pass finds every thread already pinned.
	for pass := 0; setAllThreads(t, &one) > 0; pass++ {
		if pass == 10 {
			t.Fatal("pin threads to one CPU: new threads keep appearing")
		}
	}
	t.Cleanup(func() {
		setAllThreads(t, &old)
		runtime.GOMAXPROCS(procs)
	})
}

// setAllThreads sets the affinity of every thread of this process and returns how many did
// not have it already.
func setAllThreads(t testing.TB, set *unix.CPUSet) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatalf("list threads: %v", err)
	}
	changed := 0
	for _, e := range entries {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		var cur unix.CPUSet
		if err := unix.SchedGetaffinity(tid, &cur); err != nil {
			continue // the thread exited
		}
		if cur == *set {
			continue
		}
		if err := unix.SchedSetaffinity(tid, set); err != nil {
			t.Fatalf("set CPU affinity of thread %d: %v", tid, err)
		}
		changed++
	}
	return changed
}
