package cluster

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/containerd/cgroups/v3"

	"github.com/cnibench/cnibench/internal/lab"
)

const cgroupMount = "/sys/fs/cgroup"

// cgroupTree is how this host mounts cgroups, which decides where the cluster's tree
// (/cnb-<name>/ctl, /cnb-<name>/nodeN/system, and the kubelets' pods below each node) lives.
type cgroupTree struct {
	// mode is the host's layout: unified (cgroup v2 only), hybrid (v1 controllers plus an
	// empty cgroup2 at unified/) or legacy (v1 only).
	mode cgroups.CGMode
	// dirs are the mount points the cluster creates its tree in: on a unified host the one
	// cgroup2 mount; otherwise every v1 hierarchy, which the kubelet's cgroupfs driver joins,
	// and the hybrid layout's cgroup2 mount, where runc creates container cgroups too.
	dirs []string
	// unified is the cgroup2 mount point when it holds the controllers (unified mode), "" otherwise.
	unified string
}

// String names the layout the way the host requirements in docs/local-cluster.md do.
func (t cgroupTree) String() string {
	switch t.mode {
	case cgroups.Unified:
		return "cgroup v2 (unified)"
	case cgroups.Hybrid:
		return "cgroup v1 + v2 (hybrid)"
	case cgroups.Legacy:
		return "cgroup v1 (legacy)"
	}
	return "no cgroups"
}

// detectCgroups reads the host's cgroup layout: the mode from the file system type of
// /sys/fs/cgroup, the hierarchies from the mount table.
func detectCgroups() (cgroupTree, error) {
	t := cgroupTree{mode: cgroups.Mode()}
	switch t.mode {
	case cgroups.Unified:
		t.dirs, t.unified = []string{cgroupMount}, cgroupMount
		return t, nil
	case cgroups.Unavailable:
		return t, errors.New("cgroups: nothing is mounted at /sys/fs/cgroup; the local cluster needs cgroup v2 (or v1) mounted there")
	}
	dirs, err := mountedHierarchies()
	if err != nil {
		return t, err
	}
	if len(dirs) == 0 {
		return t, errors.New("cgroups: no hierarchy is mounted below /sys/fs/cgroup")
	}
	t.dirs = dirs
	return t, nil
}

// mountedHierarchies lists the cgroup and cgroup2 mounts directly below /sys/fs/cgroup.
func mountedHierarchies() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	defer f.Close()
	var dirs []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		sep := indexOf(fields, "-")
		if sep < 0 || sep+1 >= len(fields) || (fields[sep+1] != "cgroup" && fields[sep+1] != "cgroup2") {
			continue
		}
		if mp := fields[4]; filepath.Dir(mp) == cgroupMount {
			dirs = append(dirs, mp)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
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

// ensure creates path (e.g. /cnb-a/node1/system) in every hierarchy. v1 cpuset directories start
// with empty cpus/mems, which would refuse every task, so they inherit their parent's. On a
// unified host the controllers must be enabled in every ancestor's subtree_control for the
// kubelet to find them in its cgroup root; the cluster never puts a process in an inner node of
// its tree, which cgroup v2 would forbid.
func (t cgroupTree) ensure(path string) error {
	for _, base := range t.dirs {
		cur := base
		for _, part := range strings.Split(strings.Trim(path, "/"), "/") {
			parent := cur
			cur = filepath.Join(cur, part)
			if err := os.Mkdir(cur, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("create cgroup %s: %w", cur, err)
			}
			if filepath.Base(base) == "cpuset" {
				for _, file := range []string{"cpuset.cpus", "cpuset.mems"} {
					if err := inheritFile(parent, cur, file); err != nil {
						return err
					}
				}
			}
		}
	}
	if t.unified == "" {
		return nil
	}
	return t.enableControllers(path)
}

// treeControllers are the controllers the cluster enables in its tree on a unified host: those
// the kubelet checks for in its cgroup root (cpu, cpuset, memory, hugetlb and pids, each when
// the kernel has it) and io, which runc configures for containers.
var treeControllers = []string{"cpu", "cpuset", "memory", "hugetlb", "pids", "io"}

// enableControllers turns on treeControllers in the subtree_control of every ancestor of path,
// from the root down. Each controller is written on its own: the kernel refuses a whole write
// for one controller it cannot enable, and only a failure of one the kubelet needs is an error.
// (containerd/cgroups' ToggleControllers writes them together and keeps only the last error.)
func (t cgroupTree) enableControllers(path string) error {
	avail, err := os.ReadFile(filepath.Join(t.unified, "cgroup.controllers"))
	if err != nil {
		return fmt.Errorf("read the root cgroup's controllers: %w", err)
	}
	dir := t.unified
	for _, part := range strings.Split(strings.Trim(path, "/"), "/") {
		enabled, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
		if err != nil {
			return fmt.Errorf("read controllers of %s: %w", dir, err)
		}
		for _, c := range treeControllers {
			if !slices.Contains(strings.Fields(string(avail)), c) || slices.Contains(strings.Fields(string(enabled)), c) {
				continue
			}
			err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+"+c), 0o644)
			if err != nil && slices.Contains(neededControllers, c) {
				return fmt.Errorf("enable the %s controller below %s: %w", c, dir, err)
			}
		}
		dir = filepath.Join(dir, part)
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
func (t cgroupTree) procsFiles(path string) []string {
	files := make([]string, 0, len(t.dirs))
	for _, d := range t.dirs {
		files = append(files, filepath.Join(d, path, "cgroup.procs"))
	}
	return files
}

// children lists the directories directly below path (in the first hierarchy, since the
// cluster creates the same tree in all).
func (t cgroupTree) children(path string) []string {
	if len(t.dirs) == 0 {
		return nil
	}
	entries, _ := os.ReadDir(filepath.Join(t.dirs[0], path))
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

// pidsUnder lists every process in path or below it, in any hierarchy.
func (t cgroupTree) pidsUnder(path string) []int {
	seen := map[int]bool{}
	for _, d := range t.dirs {
		_ = filepath.WalkDir(filepath.Join(d, path), func(p string, e fs.DirEntry, err error) error {
			if err != nil || !e.IsDir() {
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

// removeTree removes path and everything below it, deepest first, in every hierarchy.
func (t cgroupTree) removeTree(path string) error {
	var errs []error
	for _, d := range t.dirs {
		var dirs []string
		_ = filepath.WalkDir(filepath.Join(d, path), func(p string, e fs.DirEntry, err error) error {
			if err == nil && e.IsDir() {
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

// clusterTrees lists the names of clusters that have a cgroup tree (/cnb-<name>) in any
// hierarchy, so that a sweep finds a cluster whose state and namespaces are already gone.
func (t cgroupTree) clusterTrees() []string {
	seen := map[string]bool{}
	var out []string
	for _, d := range t.dirs {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			name, ok := strings.CutPrefix(e.Name(), "cnb-")
			if ok && e.IsDir() && lab.CheckClusterName(name) == nil && !seen[name] {
				seen[name] = true
				out = append(out, name)
			}
		}
	}
	sort.Strings(out)
	return out
}
