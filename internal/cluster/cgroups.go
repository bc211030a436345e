package cluster

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

const cgroupMount = "/sys/fs/cgroup"

// v1Hierarchies lists the mounted cgroup hierarchies by directory under /sys/fs/cgroup: every
// v1 hierarchy, which the kubelet's cgroupfs driver joins, so the node cgroups must exist in
// all; and the hybrid layout's cgroup2 mount, where runc creates container cgroups too, so
// delete must look there as well.
func v1Hierarchies() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	defer f.Close()
	var dirs []string
	v1 := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		sep := indexOf(fields, "-")
		if sep < 0 || sep+1 >= len(fields) || (fields[sep+1] != "cgroup" && fields[sep+1] != "cgroup2") {
			continue
		}
		mp := fields[4]
		if filepath.Dir(mp) == cgroupMount {
			dirs = append(dirs, filepath.Base(mp))
			v1 = v1 || fields[sep+1] == "cgroup"
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	if !v1 {
		return nil, errors.New("no cgroup v1 hierarchy is mounted under /sys/fs/cgroup: this host needs cgroup v1 (hybrid) for the local cluster")
	}
	sort.Strings(dirs)
	return dirs, nil
}

func indexOf(xs []string, x string) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}

// ensureCgroup creates path (e.g. /cnb-a/node1) in every hierarchy. cpuset directories start with
// empty cpus/mems, which would refuse every task, so they inherit their parent's.
func ensureCgroup(hierarchies []string, path string) error {
	for _, h := range hierarchies {
		base := filepath.Join(cgroupMount, h)
		cur := base
		for _, part := range strings.Split(strings.Trim(path, "/"), "/") {
			parent := cur
			cur = filepath.Join(cur, part)
			if err := os.Mkdir(cur, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("create cgroup %s: %w", cur, err)
			}
			if h == "cpuset" {
				for _, file := range []string{"cpuset.cpus", "cpuset.mems"} {
					if err := inheritFile(parent, cur, file); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

func inheritFile(parent, child, file string) error {
	cur, err := os.ReadFile(filepath.Join(child, file))
	if err == nil && strings.TrimSpace(string(cur)) != "" {
		return nil
	}
	val, err := os.ReadFile(filepath.Join(parent, file))
	if err != nil {
		return fmt.Errorf("read %s of %s: %w", file, parent, err)
	}
	if err := os.WriteFile(filepath.Join(child, file), val, 0o644); err != nil {
		return fmt.Errorf("set %s of %s: %w", file, child, err)
	}
	return nil
}

// procsFiles are the cgroup.procs files a process writes itself into to join path everywhere.
func procsFiles(hierarchies []string, path string) []string {
	files := make([]string, 0, len(hierarchies))
	for _, h := range hierarchies {
		files = append(files, filepath.Join(cgroupMount, h, path, "cgroup.procs"))
	}
	return files
}

// pidsUnder lists every process in path or below it, in any hierarchy.
func pidsUnder(hierarchies []string, path string) []int {
	seen := map[int]bool{}
	for _, h := range hierarchies {
		root := filepath.Join(cgroupMount, h, path)
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			data, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
			if err != nil {
				return nil
			}
			for _, line := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(line); err == nil {
					seen[pid] = true
				}
			}
			return nil
		})
	}
	pids := make([]int, 0, len(seen))
	for pid := range seen {
		pids = append(pids, pid)
	}
	sort.Ints(pids)
	return pids
}

// removeCgroupTree removes path and everything below it, deepest first, in every hierarchy.
func removeCgroupTree(hierarchies []string, path string) error {
	var errs []error
	for _, h := range hierarchies {
		root := filepath.Join(cgroupMount, h, path)
		var dirs []string
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := os.Remove(dirs[i]); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", dirs[i], err))
			}
		}
	}
	return errors.Join(errs...)
}
