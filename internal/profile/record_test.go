package profile

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRecordKnownLoad profiles the host while dd copies /dev/zero to /dev/null, a load whose
// CPU time is the kernel's read_zero path. dd's samples must match the CPU time the kernel
// charged it over the window (an independent count: /proc/PID/stat) at the sampling rate,
// most of them with read_zero on the stack; nothing from before Enable; the perf.data file
// gone.
func TestRecordKnownLoad(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("perf samples the whole host only as root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	r := Recorder{Dir: dir}
	if err := r.Check(ctx); err != nil {
		t.Fatal(err)
	}
	dd := exec.CommandContext(ctx, "dd", "if=/dev/zero", "of=/dev/null", "bs=64k")
	if err := dd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = dd.Process.Kill(); _ = dd.Wait() }()
	rec, err := r.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Enable(); err != nil {
		t.Fatal(err)
	}
	cpu0 := cpuSeconds(t, dd.Process.Pid)
	// The window is what runs between Enable and Stop.
	time.Sleep(time.Second)
	cpu1 := cpuSeconds(t, dd.Process.Pid)
	f, err := rec.Stop(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if w := rec.Window(); w < time.Second || w > 2*time.Second {
		t.Errorf("window %v, want about 1 s", w)
	}
	s := Summarize(f)
	var ddSamples, zero int
	for stack, n := range f {
		if strings.HasPrefix(stack, "dd;") {
			ddSamples += n
			if strings.Contains(stack, ";read_zero"+KernelSuffix) || strings.Contains(stack, ";iov_iter_zero"+KernelSuffix) {
				zero += n
			}
		}
	}
	want := (cpu1 - cpu0) * Frequency
	t.Logf("dd: %d samples, %.2f CPU-s charged (%.0f samples expected); %d busy of %d", ddSamples, cpu1-cpu0, want, s.Busy, s.Samples)
	if want < 100 {
		t.Fatalf("dd ran only %.2f CPU-s in the window: too little to check against", cpu1-cpu0)
	}
	if float64(ddSamples) < 0.65*want || float64(ddSamples) > 1.35*want {
		t.Errorf("dd has %d samples, its CPU time says %.0f", ddSamples, want)
	}
	// On at most 2 CPUs for about a second: perf's setup before Enable is not in it.
	if s.Samples > 2*Frequency*3/2 {
		t.Errorf("%d samples in a 1 s window at %d Hz", s.Samples, Frequency)
	}
	if float64(zero) < 0.2*float64(ddSamples) {
		t.Errorf("read_zero on %d of dd's %d stacks:\n%s", zero, ddSamples, f)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

// cpuSeconds is the user and system time the kernel charged a process (clock ticks of 1/100 s,
// the USER_HZ every Linux ABI uses).
func cpuSeconds(t *testing.T, pid int) float64 {
	t.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	utime, err1 := strconv.ParseFloat(fields[11], 64)
	stime, err2 := strconv.ParseFloat(fields[12], 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("parse %s: %v %v", s, err1, err2)
	}
	return (utime + stime) / 100
}
