package record

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Owner identifies the process writing a run, so that a run whose process was killed (and
// so never finished it) can be told from one still going. A pid alone is not enough: pids
// are reused, and a reboot restarts them; the process's start time (in clock ticks since
// boot) and the boot id make the triple unique on a host.
type Owner struct {
	Host   string `json:"host"`
	BootID string `json:"bootId"`
	PID    int    `json:"pid"`
	// Start is field 22 of /proc/PID/stat: the process's start time after boot.
	Start uint64 `json:"start"`
}

// Liveness of a run's owner, as seen from the current process.
const (
	OwnerAlive   = "alive"
	OwnerDead    = "dead"
	OwnerUnknown = "unknown" // another host, or a run stored before owners were recorded
)

// InterruptedNote starts the note of a run that stopped before its end: cancelled, or found
// with its process gone.
const InterruptedNote = "interrupted"

// CurrentOwner describes the calling process.
func CurrentOwner() (Owner, error) { return ProcessOwner(os.Getpid()) }

// ProcessOwner describes the process pid of this host.
func ProcessOwner(pid int) (Owner, error) {
	host, err := os.Hostname()
	if err != nil {
		return Owner{}, fmt.Errorf("host name: %w", err)
	}
	boot, err := bootID()
	if err != nil {
		return Owner{}, err
	}
	start, err := processStart(pid)
	if err != nil {
		return Owner{}, err
	}
	return Owner{Host: host, BootID: boot, PID: pid, Start: start}, nil
}

// Liveness says whether the owner process still runs. Only a process of this host's current
// boot can be checked.
func (o Owner) Liveness() string {
	host, err := os.Hostname()
	if o.PID == 0 || err != nil || host != o.Host {
		return OwnerUnknown
	}
	boot, err := bootID()
	if err != nil {
		return OwnerUnknown
	}
	if boot != o.BootID {
		return OwnerDead // the host rebooted since
	}
	start, err := processStart(o.PID)
	if err != nil || start != o.Start {
		return OwnerDead // gone, or the pid now belongs to another process
	}
	return OwnerAlive
}

// String is the owner as a note names it.
func (o Owner) String() string { return fmt.Sprintf("pid %d on %s", o.PID, o.Host) }

// Interrupted reports whether a run stopped before its end: its status is partial with an
// interruption note, or it is still marked running while its owner is dead.
func (r Run) Interrupted() bool {
	switch r.Status {
	case StatusPartial:
		return strings.HasPrefix(r.Note, InterruptedNote)
	case StatusRunning:
		return r.Owner.Liveness() == OwnerDead
	}
	return false
}

func bootID() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", fmt.Errorf("boot id: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// processStart reads a process's start time from /proc/PID/stat. The command name (field 2)
// may hold spaces and parentheses, so fields are counted after its last ')'.
func processStart(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("process %d: %w", pid, err)
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("process %d: malformed stat", pid)
	}
	// After ')' come field 3 (state) onwards; the start time is field 22.
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0, fmt.Errorf("process %d: stat has %d fields after the name", pid, len(f))
	}
	return strconv.ParseUint(f[19], 10, 64)
}
