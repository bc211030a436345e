package monitor

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// checkStat compares s with want, ignoring Time, which must merely be recent.
func checkStat(t *testing.T, s, want NodeStat) {
	t.Helper()
	if time.Since(s.Time) > time.Minute || s.Time.After(time.Now()) {
		t.Errorf("Time = %s, want now", s.Time)
	}
	s.Time, want.Time = time.Time{}, time.Time{}
	floats := [][2]float64{
		{s.CPUBusySeconds, want.CPUBusySeconds}, {s.CPUTotalSeconds, want.CPUTotalSeconds},
		{s.CPUSoftirqSeconds, want.CPUSoftirqSeconds}, {s.CgroupCPUSeconds, want.CgroupCPUSeconds},
	}
	for _, f := range floats {
		if !near(f[0], f[1]) {
			t.Errorf("got  %+v\nwant %+v", s, want)
			return
		}
	}
	s.CPUBusySeconds, s.CPUTotalSeconds, s.CPUSoftirqSeconds, s.CgroupCPUSeconds = 0, 0, 0, 0
	want.CPUBusySeconds, want.CPUTotalSeconds, want.CPUSoftirqSeconds, want.CgroupCPUSeconds = 0, 0, 0, 0
	if s != want {
		t.Errorf("got  %+v\nwant %+v", s, want)
	}
}

// The fixtures' numbers are set by hand; the expected values are worked out in the comments.
func TestReadFromFixtures(t *testing.T) {
	for _, c := range []struct {
		name string
		want NodeStat
	}{{
		// cgroup v1 (hybrid: cgroup2 at unified/ without controllers), 4 CPUs.
		// cpu line: user 1000 nice 20 system 300 idle 5000 iowait 100 irq 10 softirq 70
		// steal 5 (guest 50 is inside user): busy 1405 ticks, total 6505, at USER_HZ 100.
		name: "v1",
		want: NodeStat{
			BootID: "11111111-2222-3333-4444-555555555555", CPUs: 4,
			CPUBusySeconds: 14, CPUStealSeconds: 0.05, CPUTotalSeconds: 65.05, CPUSoftirqSeconds: 0.70,
			MemTotalBytes: 16384000 * 1024, MemAvailableBytes: 8192000 * 1024,
			CgroupCPUSeconds: 2.5, CgroupMemoryBytes: 104857600,
			NetPackets: -1, // no net/dev in this fixture
		},
	}, {
		// cgroup v2, 2 CPUs. busy 200+100+40+10 = 350 ticks, total 350+1600+50 = 2000.
		// cpu.stat usage_usec 1234567. net/dev: eth0 1200 in, 34 out; cnb-x 10 and 6; lo
		// not counted.
		name: "v2",
		want: NodeStat{
			BootID: "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", CPUs: 2,
			CPUBusySeconds: 3.4, CPUStealSeconds: 0.1, CPUTotalSeconds: 20, CPUSoftirqSeconds: 0.4,
			MemTotalBytes: 4096000 * 1024, MemAvailableBytes: 3072000 * 1024,
			CgroupCPUSeconds: 1.234567, CgroupMemoryBytes: 52428800,
			NetPackets: 1250,
		},
	}} {
		t.Run(c.name, func(t *testing.T) {
			s, err := ReadFrom(filepath.Join("testdata", c.name, "proc"), filepath.Join("testdata", c.name, "sys"))
			if err != nil {
				t.Fatal(err)
			}
			checkStat(t, s, c.want)
		})
	}
}

// copyTree copies a fixture into a temporary directory that a test may then alter.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReadFromVariants(t *testing.T) {
	read := func(t *testing.T, root string) NodeStat {
		t.Helper()
		s, err := ReadFrom(filepath.Join(root, "proc"), filepath.Join(root, "sys"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	t.Run("no cgroup files", func(t *testing.T) {
		root := copyTree(t, "testdata/v1")
		if err := os.RemoveAll(filepath.Join(root, "sys")); err != nil {
			t.Fatal(err)
		}
		if s := read(t, root); s.CgroupCPUSeconds != -1 || s.CgroupMemoryBytes != -1 {
			t.Errorf("cgroup cpu, memory = %v, %v; want -1, -1", s.CgroupCPUSeconds, s.CgroupMemoryBytes)
		}
	})
	t.Run("v1 cpu,cpuacct directory only", func(t *testing.T) {
		root := copyTree(t, "testdata/v1")
		cg := filepath.Join(root, "sys/fs/cgroup")
		if err := os.Rename(filepath.Join(cg, "cpuacct"), filepath.Join(cg, "cpu,cpuacct")); err != nil {
			t.Fatal(err)
		}
		if s := read(t, root); s.CgroupCPUSeconds != 2.5 {
			t.Errorf("cgroup cpu = %v, want 2.5", s.CgroupCPUSeconds)
		}
	})
	t.Run("v2 root cgroup has no memory.current", func(t *testing.T) {
		root := copyTree(t, "testdata/v2")
		if err := os.Remove(filepath.Join(root, "sys/fs/cgroup/memory.current")); err != nil {
			t.Fatal(err)
		}
		if s := read(t, root); s.CgroupMemoryBytes != -1 || !near(s.CgroupCPUSeconds, 1.234567) {
			t.Errorf("cgroup cpu, memory = %v, %v; want 1.234567, -1", s.CgroupCPUSeconds, s.CgroupMemoryBytes)
		}
	})
	t.Run("old kernel: short cpu line, no MemAvailable", func(t *testing.T) {
		root := copyTree(t, "testdata/v1")
		write(t, filepath.Join(root, "proc/stat"), "cpu  100 0 50 850\ncpu0 100 0 50 850\n")
		write(t, filepath.Join(root, "proc/meminfo"), "MemTotal: 1000 kB\nMemFree: 100 kB\nBuffers: 50 kB\nCached: 250 kB\n")
		s := read(t, root)
		if !near(s.CPUBusySeconds, 1.5) || !near(s.CPUTotalSeconds, 10) || s.CPUs != 1 || s.MemAvailableBytes != 400*1024 {
			t.Errorf("busy %v total %v cpus %d available %d; want 1.5, 10, 1, %d", s.CPUBusySeconds, s.CPUTotalSeconds, s.CPUs, s.MemAvailableBytes, 400*1024)
		}
	})
	t.Run("USER_HZ from auxv", func(t *testing.T) {
		root := copyTree(t, "testdata/v2")
		write(t, filepath.Join(root, "proc/self/auxv"), string(auxv(6, 4096, atClkTck, 250, 0, 0)))
		// 340 busy ticks (steal apart) at 250 Hz.
		if s := read(t, root); !near(s.CPUBusySeconds, 1.36) {
			t.Errorf("busy = %v, want 1.36", s.CPUBusySeconds)
		}
	})
}

func TestReadFromErrors(t *testing.T) {
	for name, c := range map[string]struct{ file, content, want string }{
		"no boot id":       {"proc/sys/kernel/random/boot_id", "", "boot id"},
		"no cpu line":      {"proc/stat", "cpu0 1 2 3 4\n", "no cpu line"},
		"no cpuN line":     {"proc/stat", "cpu 1 2 3 4\n", "no cpuN"},
		"short cpu line":   {"proc/stat", "cpu 1 2 3\ncpu0 1 2 3\n", "at least 4"},
		"bad cpu field":    {"proc/stat", "cpu 1 x 3 4\ncpu0 1 2 3 4\n", "field 2"},
		"no MemTotal":      {"proc/meminfo", "MemFree: 1 kB\n", "MemTotal"},
		"bad meminfo line": {"proc/meminfo", "MemTotal: many kB\n", "MemTotal"},
	} {
		t.Run(name, func(t *testing.T) {
			root := copyTree(t, "testdata/v1")
			write(t, filepath.Join(root, c.file), c.content)
			_, err := ReadFrom(filepath.Join(root, "proc"), filepath.Join(root, "sys"))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one mentioning %q", err, c.want)
			}
		})
	}
	if _, err := ReadFrom(t.TempDir(), t.TempDir()); err == nil {
		t.Error("ReadFrom on empty trees succeeded")
	}
}

// auxv encodes key/value pairs as the kernel lays out the auxiliary vector.
func auxv(kv ...uint64) []byte {
	word := strconv.IntSize / 8
	b := make([]byte, len(kv)*word)
	for i, v := range kv {
		if word == 4 {
			binary.NativeEndian.PutUint32(b[i*word:], uint32(v))
		} else {
			binary.NativeEndian.PutUint64(b[i*word:], v)
		}
	}
	return b
}

func TestParseAuxv(t *testing.T) {
	if v, ok := parseAuxv(auxv(6, 4096, 17, 100, 0, 0), 17); !ok || v != 100 {
		t.Errorf("parseAuxv = %d, %v; want 100", v, ok)
	}
	// Entries after AT_NULL and a truncated tail are ignored.
	if _, ok := parseAuxv(auxv(6, 4096, 0, 0, 17, 100), 17); ok {
		t.Error("found a key after AT_NULL")
	}
	if _, ok := parseAuxv(auxv(6, 4096, 17)[:20], 17); ok {
		t.Error("found a key in a truncated pair")
	}
}

// TestReadHost reads this machine's real counters. Outside a container the cgroup values are
// the root cgroup's, which on a cgroup v1 or hybrid host include everything running.
func TestReadHost(t *testing.T) {
	s, err := Read()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", s)
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Fatal(err)
	}
	if s.BootID != strings.TrimSpace(string(b)) {
		t.Errorf("boot id %q, want %q", s.BootID, b)
	}
	// NumCPU counts the CPUs this process may use, a subset of those online.
	if s.CPUs < runtime.NumCPU() {
		t.Errorf("cpus = %d, fewer than runtime.NumCPU() = %d", s.CPUs, runtime.NumCPU())
	}
	if !(0 < s.CPUSoftirqSeconds && s.CPUSoftirqSeconds < s.CPUBusySeconds && s.CPUBusySeconds < s.CPUTotalSeconds) {
		t.Errorf("want 0 < softirq < busy < total: %v, %v, %v", s.CPUSoftirqSeconds, s.CPUBusySeconds, s.CPUTotalSeconds)
	}
	if !(0 < s.MemAvailableBytes && s.MemAvailableBytes < s.MemTotalBytes) {
		t.Errorf("want 0 < available < total: %d, %d", s.MemAvailableBytes, s.MemTotalBytes)
	}
	// The host's own interfaces carry this machine's traffic (the tools' downloads at least).
	if s.NetPackets <= 0 {
		t.Errorf("packets on the host's interfaces = %d, want positive", s.NetPackets)
	}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err != nil {
		// cgroup v1 or hybrid, this machine: the root cgroup has both counters.
		if s.CgroupCPUSeconds <= 0 || s.CgroupMemoryBytes <= 0 {
			t.Errorf("cgroup cpu, memory = %v, %v; want both positive on a v1 host", s.CgroupCPUSeconds, s.CgroupMemoryBytes)
		}
	}
}

// TestDeltaHost burns CPU between two real readings and checks that the usage shows it.
func TestDeltaHost(t *testing.T) {
	before, err := Read()
	if err != nil {
		t.Fatal(err)
	}
	const burn = 300 * time.Millisecond
	x := 0
	for start := time.Now(); time.Since(start) < burn; {
		x++
	}
	after, err := Read()
	if err != nil {
		t.Fatal(err)
	}
	u, err := Delta(before, after)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v (%d iterations)", u, x)
	if u.WallSeconds < burn.Seconds() || u.WallSeconds > 10 {
		t.Errorf("wall = %v s, want about %v", u.WallSeconds, burn.Seconds())
	}
	// /proc/stat counts in 10 ms ticks, sampled: allow a generous margin below 0.3 s.
	if u.CPUSeconds < 0.2 || u.CPUBusyPct <= 0 || u.CPUBusyPct > 100 || u.CPUCores > float64(after.CPUs) {
		t.Errorf("busy %v s, %v%%, %v cores; want >= 0.2 s of one busy core", u.CPUSeconds, u.CPUBusyPct, u.CPUCores)
	}
	if before.CgroupCPUSeconds >= 0 && u.CgroupCPUSeconds < 0.2 {
		t.Errorf("cgroup cpu = %v s, want >= 0.2", u.CgroupCPUSeconds)
	}
	if u.MemUsedBytes == 0 || u.MemUsedBytes >= after.MemTotalBytes {
		t.Errorf("mem used = %d of %d", u.MemUsedBytes, after.MemTotalBytes)
	}
}

func TestDelta(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	before := NodeStat{BootID: "b", CPUs: 4, CPUBusySeconds: 100, CPUTotalSeconds: 400, CPUSoftirqSeconds: 10,
		MemTotalBytes: 1000, MemAvailableBytes: 600, CgroupCPUSeconds: 5, CgroupMemoryBytes: 10, Time: t0}
	after := before
	// 10 s on 4 CPUs: 40 CPU-seconds, 10 of them busy (2 softirq), the container 3 of those.
	after.CPUBusySeconds, after.CPUTotalSeconds, after.CPUSoftirqSeconds = 110, 440, 12
	after.CgroupCPUSeconds, after.MemAvailableBytes, after.Time = 8, 250, t0.Add(10*time.Second)
	u, err := Delta(before, after)
	if err != nil {
		t.Fatal(err)
	}
	want := Usage{WallSeconds: 10, CPUBusyPct: 25, CPUCores: 1, CPUSeconds: 10, SoftirqSeconds: 2, CgroupCPUSeconds: 3, MemUsedBytes: 750}
	if u != want {
		t.Errorf("Delta = %+v\nwant    %+v", u, want)
	}

	noCgroup := after
	noCgroup.CgroupCPUSeconds = -1
	if u, err := Delta(before, noCgroup); err != nil || u.CgroupCPUSeconds != -1 {
		t.Errorf("unreadable cgroup: %+v, %v; want cgroup cpu -1", u, err)
	}
	restarted := after
	restarted.CgroupCPUSeconds = 1
	if u, err := Delta(before, restarted); err != nil || u.CgroupCPUSeconds != -1 {
		t.Errorf("cgroup counter reset: %+v, %v; want cgroup cpu -1", u, err)
	}
	same := before
	if u, err := Delta(before, same); err != nil || u.CPUBusyPct != 0 || u.WallSeconds != 0 {
		t.Errorf("identical readings: %+v, %v; want zero usage", u, err)
	}

	for name, mutate := range map[string]func(*NodeStat){
		"different kernels": func(s *NodeStat) { s.BootID = "other" },
		"time backwards":    func(s *NodeStat) { s.Time = t0.Add(-time.Second) },
		"counter decreased": func(s *NodeStat) { s.CPUBusySeconds = 50 },
	} {
		bad := after
		mutate(&bad)
		if _, err := Delta(before, bad); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestDeltaStealApart: a second in which one of two CPUs worked and the other was taken by
// the hypervisor is 50 % busy and 50 % steal, not 100 % busy.
func TestDeltaStealApart(t *testing.T) {
	at := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	before := NodeStat{BootID: "b", CPUs: 2, CPUBusySeconds: 10, CPUStealSeconds: 4, CPUTotalSeconds: 100, Time: at, CgroupCPUSeconds: -1}
	after := before
	after.CPUBusySeconds, after.CPUStealSeconds, after.CPUTotalSeconds, after.Time = 11, 5, 102, at.Add(time.Second)
	u, err := Delta(before, after)
	if err != nil {
		t.Fatal(err)
	}
	if u.CPUBusyPct != 50 || u.StealPct != 50 || u.CPUSeconds != 1 {
		t.Errorf("busy %v %%, steal %v %%, cpu %v s; want 50, 50, 1", u.CPUBusyPct, u.StealPct, u.CPUSeconds)
	}
	after.CPUStealSeconds = 3
	if _, err := Delta(before, after); err == nil {
		t.Error("a steal counter that went back was accepted")
	}
}

func TestUsageWithout(t *testing.T) {
	u := Usage{CPUSeconds: 4, CPUBusyPct: 50, CPUCores: 1}
	got := u.Without(1)
	if got.CPUSeconds != 3 || got.CPUBusyPct != 37.5 || got.CPUCores != 0.75 {
		t.Errorf("4 CPU-s at 50 %% without 1: %+v", got)
	}
	if got := u.Without(9); got.CPUSeconds != 0 || got.CPUBusyPct != 0 {
		t.Errorf("more taken out than there was: %+v", got)
	}
	if got := u.Without(0); got != u {
		t.Errorf("nothing taken out: %+v", got)
	}
}

// A malformed /proc/net/dev makes the packets unknown, not zero; so does a missing one.
func TestReadNetPacketsMalformed(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"short":  "h1\nh2\n  eth0: 1 2 3\n",
		"letter": "h1\nh2\n  eth0: 1 x 0 0 0 0 0 0 5 6 0 0 0 0 0 0\n",
	} {
		path := filepath.Join(dir, name)
		write(t, path, content)
		if got := readNetPackets(path); got != -1 {
			t.Errorf("%s: %d packets, want -1", name, got)
		}
	}
	if got := readNetPackets(filepath.Join(dir, "absent")); got != -1 {
		t.Errorf("absent: %d packets, want -1", got)
	}
}

// Packets between readings are a difference of the interfaces' counters; unknown where a
// reading lacks them or they went backwards.
func TestDeltaPackets(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(pkts int64, d time.Duration) NodeStat {
		return NodeStat{BootID: "b", CPUs: 1, CPUBusySeconds: 1, CPUTotalSeconds: 2, NetPackets: pkts, Time: t0.Add(d)}
	}
	for _, c := range []struct {
		before, after, want int64
	}{{100, 350, 250}, {-1, 350, -1}, {100, -1, -1}, {400, 350, -1}} {
		u, err := Delta(at(c.before, 0), at(c.after, time.Second))
		if err != nil || u.Packets != c.want {
			t.Errorf("%d then %d: %d packets (%v), want %d", c.before, c.after, u.Packets, err, c.want)
		}
	}
}
