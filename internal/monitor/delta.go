package monitor

import (
	"errors"
	"fmt"
)

// Usage is what happened between two readings of the same kernel.
type Usage struct {
	// WallSeconds is the time between the readings.
	WallSeconds float64 `json:"wall_s"`
	// CPUBusyPct is the busy share of all CPUs' time, 0-100, steal excluded.
	CPUBusyPct float64 `json:"cpu_busy_pct"`
	// StealPct is the share of all CPUs' time the hypervisor gave to other guests, 0-100.
	StealPct float64 `json:"steal_pct"`
	// CPUCores is the average number of busy CPUs: CPUBusyPct/100 times the CPU count.
	CPUCores float64 `json:"cpu_cores"`
	// CPUSeconds is the busy CPU time, summed over CPUs.
	CPUSeconds float64 `json:"cpu_s"`
	// SoftirqSeconds is the softirq part of CPUSeconds.
	SoftirqSeconds float64 `json:"softirq_s"`
	// CgroupCPUSeconds is the container's own CPU time, -1 if either reading lacks it.
	CgroupCPUSeconds float64 `json:"cgroup_cpu_s"`
	// MemUsedBytes is MemTotal-MemAvailable at the second reading: a level, not a change,
	// since memory in use is a state while the other fields are amounts of work.
	MemUsedBytes uint64 `json:"mem_used_bytes"`
	// Packets is the packets the reader's interfaces received and sent between the
	// readings, -1 if either reading lacks them or they went backwards (a new interface).
	Packets int64 `json:"packets"`
}

// Delta returns the usage between before and after. It fails when the readings come from
// different kernels (boot IDs differ: different hosts, or a reboot in between), when time
// goes backwards, or when a /proc/stat counter decreases.
func Delta(before, after NodeStat) (Usage, error) {
	if before.BootID != after.BootID {
		return Usage{}, fmt.Errorf("cpu usage: readings from different kernels (boot id %s, then %s)", before.BootID, after.BootID)
	}
	wall := after.Time.Sub(before.Time).Seconds()
	if wall < 0 {
		return Usage{}, fmt.Errorf("cpu usage: time goes backwards: %s, then %s", before.Time, after.Time)
	}
	busy := after.CPUBusySeconds - before.CPUBusySeconds
	total := after.CPUTotalSeconds - before.CPUTotalSeconds
	softirq := after.CPUSoftirqSeconds - before.CPUSoftirqSeconds
	steal := after.CPUStealSeconds - before.CPUStealSeconds
	if busy < 0 || total < 0 || softirq < 0 || steal < 0 {
		return Usage{}, errors.New("cpu usage: a /proc/stat counter decreased between the readings")
	}
	u := Usage{
		WallSeconds:      wall,
		CPUSeconds:       busy,
		SoftirqSeconds:   softirq,
		CgroupCPUSeconds: -1,
		Packets:          -1,
	}
	if before.NetPackets >= 0 && after.NetPackets >= before.NetPackets {
		u.Packets = after.NetPackets - before.NetPackets
	}
	// The percentage is taken against the counters' own total rather than wall time times
	// CPUs: both come from the same ticks, so the ratio is exact even when Time, taken a
	// moment after the counters, is off by a scheduling delay. Readings closer than one
	// tick (10 ms) have no total and count as idle.
	if total > 0 {
		// The counters are float seconds near 10^3-10^6 whose differences carry rounding
		// error: a fully busy interval can come out a hair above 100%.
		u.CPUBusyPct = min(100*busy/total, 100)
		u.StealPct = min(100*steal/total, 100)
		u.CPUCores = u.CPUBusyPct / 100 * float64(after.CPUs)
	}
	// A cgroup counter that decreased belongs to a new container (a restart between the
	// readings): the host figures still stand, the container's are unknown.
	if before.CgroupCPUSeconds >= 0 && after.CgroupCPUSeconds >= before.CgroupCPUSeconds {
		u.CgroupCPUSeconds = after.CgroupCPUSeconds - before.CgroupCPUSeconds
	}
	if after.MemTotalBytes > after.MemAvailableBytes {
		u.MemUsedBytes = after.MemTotalBytes - after.MemAvailableBytes
	}
	return u, nil
}

// Without takes seconds of CPU time that were not the measured work (spinners that kept the
// CPUs awake) out of the busy figures, never below zero.
func (u Usage) Without(seconds float64) Usage {
	if seconds <= 0 || u.CPUSeconds <= 0 {
		return u
	}
	left := max(u.CPUSeconds-seconds, 0)
	scale := left / u.CPUSeconds
	u.CPUBusyPct *= scale
	u.CPUCores *= scale
	u.CPUSeconds = left
	return u
}
