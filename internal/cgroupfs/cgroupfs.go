// Package cgroupfs finds the host's cgroup2 hierarchy, which the datapaths' agents, the host
// snapshot and the tests all need to locate the same way.
package cgroupfs

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// Cgroup2Mount is where the host's cgroup2 hierarchy is mounted below /sys/fs/cgroup
// (/sys/fs/cgroup on a unified host, /sys/fs/cgroup/unified on a hybrid one); empty when none is.
func Cgroup2Mount() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", fmt.Errorf("find the cgroup2 mount: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// Fields after " - " are the filesystem type, source and options.
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if fields := strings.Fields(pre); ok && strings.HasPrefix(post, "cgroup2 ") && len(fields) > 4 && strings.HasPrefix(fields[4], "/sys/fs/cgroup") {
			return fields[4], nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("find the cgroup2 mount: %w", err)
	}
	return "", nil
}
