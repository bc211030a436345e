// Package monitor reads a node's CPU and memory counters from inside a pod, for
// `cnibench agent stat`, and turns two readings into the resources a benchmark used.
//
// Inside a container /proc/stat and /proc/meminfo are not namespaced: they describe the whole
// kernel, which on a real Kubernetes node is the node and on cnibench's local cluster (every
// node a network namespace of one host) is the host. NodeStat carries the kernel's boot ID so
// that callers can tell readings from pods on the same kernel apart and count its CPU once.
// The cgroup counters, by contrast, are the container's own.
package monitor

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// NodeStat is one reading of the kernel's and the container's counters.
type NodeStat struct {
	// BootID identifies the running kernel (/proc/sys/kernel/random/boot_id): pods on one
	// host share it, so host-wide CPU must be counted once per BootID.
	BootID string `json:"boot_id"`
	// CPUs is the number of online CPUs (the cpuN lines of /proc/stat).
	CPUs int `json:"cpus"`
	// CPUBusySeconds is user+nice+system+irq+softirq over all CPUs since boot. Steal is not
	// in it: on a shared VM it is time the hypervisor gave the neighbours, not work done here.
	CPUBusySeconds float64 `json:"cpu_busy_s"`
	// CPUStealSeconds is the steal time over all CPUs since boot.
	CPUStealSeconds float64 `json:"cpu_steal_s"`
	// CPUTotalSeconds is CPUBusySeconds plus idle, iowait and steal: all the CPUs' time.
	CPUTotalSeconds float64 `json:"cpu_total_s"`
	// CPUSoftirqSeconds is the softirq time over all CPUs since boot: where most of the
	// kernel's packet processing is accounted.
	CPUSoftirqSeconds float64 `json:"cpu_softirq_s"`
	// MemTotalBytes is MemTotal from /proc/meminfo.
	MemTotalBytes uint64 `json:"mem_total_bytes"`
	// MemAvailableBytes is MemAvailable from /proc/meminfo.
	MemAvailableBytes uint64 `json:"mem_available_bytes"`
	// CgroupCPUSeconds is the CPU time used by the container's cgroup, -1 if unreadable.
	CgroupCPUSeconds float64 `json:"cgroup_cpu_s"`
	// CgroupMemoryBytes is the memory charged to the container's cgroup, -1 if unreadable.
	CgroupMemoryBytes int64 `json:"cgroup_memory_bytes"`
	// NetPackets is the packets received and sent on the reader's network namespace's
	// interfaces, loopback excluded (/proc/net/dev: the pod's own eth0 inside a pod), -1 if
	// unreadable. A GSO or GRO segment counts once, as the interface saw it.
	NetPackets int64 `json:"net_packets"`
	// Time is when the reading was taken.
	Time time.Time `json:"time"`
}

// Read reads the counters from the real /proc and /sys.
func Read() (NodeStat, error) {
	return ReadFrom("/proc", "/sys")
}

// ReadFrom reads the counters from the trees at procRoot and sysRoot (tests use fixtures).
// The kernel-wide counters are required; the cgroup ones are -1 when unreadable, since a
// container runtime may hide them without making the rest of the reading useless.
func ReadFrom(procRoot, sysRoot string) (NodeStat, error) {
	var s NodeStat
	b, err := os.ReadFile(filepath.Join(procRoot, "sys/kernel/random/boot_id"))
	if err != nil {
		return s, fmt.Errorf("read boot id: %w", err)
	}
	if s.BootID = strings.TrimSpace(string(b)); s.BootID == "" {
		return s, fmt.Errorf("read boot id: %s is empty", filepath.Join(procRoot, "sys/kernel/random/boot_id"))
	}
	if err := readProcStat(filepath.Join(procRoot, "stat"), clockTicks(procRoot), &s); err != nil {
		return s, err
	}
	if err := readMeminfo(filepath.Join(procRoot, "meminfo"), &s); err != nil {
		return s, err
	}
	s.CgroupCPUSeconds, s.CgroupMemoryBytes = readCgroup(filepath.Join(sysRoot, "fs/cgroup"))
	s.NetPackets = readNetPackets(filepath.Join(procRoot, "net/dev"))
	s.Time = time.Now()
	return s, nil
}

// readProcStat fills the CPU fields from the aggregate "cpu" line and counts "cpuN" lines.
// Fields: user nice system idle iowait irq softirq steal guest guest_nice, in USER_HZ ticks.
// guest and guest_nice are already included in user and nice, so they are not added again.
func readProcStat(path string, hz float64, s *NodeStat) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read cpu counters: %w", err)
	}
	var agg []uint64
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || !strings.HasPrefix(f[0], "cpu") {
			continue
		}
		if f[0] != "cpu" {
			if _, err := strconv.Atoi(f[0][3:]); err == nil {
				s.CPUs++
			}
			continue
		}
		// user nice system idle are in every kernel since 2.6; iowait, irq, softirq and
		// steal came later and count as 0 where missing.
		if len(f) < 5 {
			return fmt.Errorf("read cpu counters: %s: cpu line has %d fields, want at least 4", path, len(f)-1)
		}
		agg = make([]uint64, 8)
		for i := 0; i < len(agg) && i+1 < len(f); i++ {
			if agg[i], err = strconv.ParseUint(f[i+1], 10, 64); err != nil {
				return fmt.Errorf("read cpu counters: %s: field %d of the cpu line: %w", path, i+1, err)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read cpu counters: %s: %w", path, err)
	}
	if agg == nil {
		return fmt.Errorf("read cpu counters: %s has no cpu line", path)
	}
	if s.CPUs == 0 {
		return fmt.Errorf("read cpu counters: %s has no cpuN lines", path)
	}
	user, nice, system, idle, iowait, irq, softirq, steal := agg[0], agg[1], agg[2], agg[3], agg[4], agg[5], agg[6], agg[7]
	busy := user + nice + system + irq + softirq
	s.CPUBusySeconds = float64(busy) / hz
	s.CPUStealSeconds = float64(steal) / hz
	s.CPUTotalSeconds = float64(busy+idle+iowait+steal) / hz
	s.CPUSoftirqSeconds = float64(softirq) / hz
	return nil
}

// readMeminfo fills the memory fields from /proc/meminfo, whose values are in KiB.
func readMeminfo(path string, s *NodeStat) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read memory counters: %w", err)
	}
	vals := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return fmt.Errorf("read memory counters: %s: %s: %w", path, name, err)
		}
		if len(f) > 1 && f[1] == "kB" {
			v *= 1024
		}
		vals[name] = v
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read memory counters: %s: %w", path, err)
	}
	total, ok := vals["MemTotal"]
	if !ok {
		return fmt.Errorf("read memory counters: %s has no MemTotal", path)
	}
	avail, ok := vals["MemAvailable"]
	if !ok {
		// Kernels before 3.14 lack MemAvailable; free plus page cache is the usual estimate.
		avail = vals["MemFree"] + vals["Buffers"] + vals["Cached"]
	}
	s.MemTotalBytes, s.MemAvailableBytes = total, min(avail, total)
	return nil
}

// readCgroup reads the container's cgroup counters under root (/sys/fs/cgroup), -1 for each
// that is unreadable. Without a cgroup namespace a container runtime mounts the container's
// own cgroup at the mount root (v1: per controller; v2: the one tree), so no path lookup in
// /proc/self/cgroup is needed; on a host the values are the root cgroup's.
func readCgroup(root string) (cpuSeconds float64, memBytes int64) {
	// cgroup.controllers exists only at the root of a cgroup2 mount. On a hybrid host cgroup2
	// sits at unified/ without controllers and the counters come from the v1 hierarchies.
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
		return readCgroupV2(root)
	}
	return readCgroupV1(root)
}

func readCgroupV2(root string) (float64, int64) {
	cpu := -1.0
	if b, err := os.ReadFile(filepath.Join(root, "cpu.stat")); err == nil {
		if usec, err := keyedValue(b, "usage_usec"); err == nil {
			cpu = float64(usec) / 1e6
		}
	}
	// memory.current does not exist in the root cgroup: a host reading gets -1.
	return cpu, readInt(filepath.Join(root, "memory.current"))
}

func readCgroupV1(root string) (float64, int64) {
	cpu := -1.0
	// cpuacct is usually co-mounted with cpu as "cpu,cpuacct", with cpuacct a symlink to it;
	// try both names for runtimes that mount only the directory.
	for _, dir := range []string{"cpuacct", "cpu,cpuacct"} {
		if ns := readInt(filepath.Join(root, dir, "cpuacct.usage")); ns >= 0 {
			cpu = float64(ns) / 1e9
			break
		}
	}
	return cpu, readInt(filepath.Join(root, "memory", "memory.usage_in_bytes"))
}

// readNetPackets sums the received and sent packets of every interface but loopback in a
// /proc/net/dev file, -1 if it is unreadable or malformed. After the two header lines each
// line is "name: rx_bytes rx_packets (6 more rx fields) tx_bytes tx_packets ...".
func readNetPackets(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return -1
	}
	var total int64
	for i, line := range strings.Split(string(b), "\n") {
		name, rest, ok := strings.Cut(line, ":")
		if i < 2 || !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 10 {
			return -1
		}
		if strings.TrimSpace(name) == "lo" {
			continue
		}
		rx, err1 := strconv.ParseInt(f[1], 10, 64)
		tx, err2 := strconv.ParseInt(f[9], 10, 64)
		if err1 != nil || err2 != nil {
			return -1
		}
		total += rx + tx
	}
	return total
}

// readInt reads a file holding one non-negative integer, -1 if that fails.
func readInt(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return -1
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || v < 0 {
		return -1
	}
	return v
}

// keyedValue returns the value of key in a "key value" per line file such as cpu.stat.
func keyedValue(b []byte, key string) (uint64, error) {
	for line := range strings.Lines(string(b)) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if ok && k == key {
			return strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, errors.New(key + " not found")
}
