package cluster

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/cgroups/v3"

	"github.com/cnibench/cnibench/internal/lab"
)

func TestParseKernelRelease(t *testing.T) {
	for rel, want := range map[string]kernelVersion{
		"6.1.0-27-amd64": {6, 1}, "6.18.44-fc-v595": {6, 18}, "5.10.0": {5, 10}, "5.4-rc1": {5, 4},
	} {
		got, err := parseKernelRelease(rel)
		if err != nil || got != want {
			t.Errorf("parseKernelRelease(%q) = %v, %v; want %v", rel, got, err, want)
		}
	}
	for _, bad := range []string{"", "6", "x.y"} {
		if _, err := parseKernelRelease(bad); err == nil {
			t.Errorf("parseKernelRelease(%q) succeeded", bad)
		}
	}
	if !(kernelVersion{5, 9}).less(minKernel) || (kernelVersion{6, 1}).less(minKernel) || !(kernelVersion{4, 19}).less(minKernel) {
		t.Error("kernel version order is wrong")
	}
}

func TestCheckControllers(t *testing.T) {
	v1 := cgroupTree{mode: cgroups.Hybrid, dirs: []string{"/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpuset", "/sys/fs/cgroup/memory", "/sys/fs/cgroup/pids", "/sys/fs/cgroup/unified"}}
	if err := checkControllers(v1); err != nil {
		t.Errorf("complete hybrid host: %v", err)
	}
	v1.dirs = slices.DeleteFunc(v1.dirs, func(d string) bool { return strings.HasSuffix(d, "memory") })
	if err := checkControllers(v1); err == nil || !strings.Contains(err.Error(), "memory") {
		t.Errorf("hybrid host without memory: err = %v, want one naming memory", err)
	}
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpuset cpu io memory hugetlb pids\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	v2 := cgroupTree{mode: cgroups.Unified, dirs: []string{root}, unified: root}
	if err := checkControllers(v2); err != nil {
		t.Errorf("complete unified host: %v", err)
	}
	if err := os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpu io memory\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := checkControllers(v2)
	if err == nil || !strings.Contains(err.Error(), "cpuset, pids") || !strings.Contains(err.Error(), "cgroup v2 (unified)") {
		t.Errorf("unified host without cpuset and pids: err = %v", err)
	}
}

// TestCgroupTreeInPlainDirs exercises the tree operations on ordinary directories standing in
// for two v1 hierarchies: the same tree in both, the cluster found by its top directory, and a
// deepest-first removal.
func TestCgroupTreeInPlainDirs(t *testing.T) {
	base := t.TempDir()
	tree := cgroupTree{mode: cgroups.Legacy, dirs: []string{filepath.Join(base, "memory"), filepath.Join(base, "pids")}}
	for _, d := range tree.dirs {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"/cnb-a/ctl", "/cnb-a/node1/system", "/cnb-a/node2/system"} {
		if err := tree.ensure(p); err != nil {
			t.Fatal(err)
		}
	}
	if got := tree.children("/cnb-a"); !slices.Equal(got, []string{"ctl", "node1", "node2"}) {
		t.Errorf("children = %v", got)
	}
	files := tree.procsFiles("/cnb-a/ctl")
	if len(files) != 2 || files[1] != filepath.Join(base, "pids", "cnb-a", "ctl", "cgroup.procs") {
		t.Errorf("procsFiles = %v", files)
	}
	if err := os.Mkdir(filepath.Join(base, "pids", "not-ours"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := tree.clusterTrees(); !slices.Equal(got, []string{"a"}) {
		t.Errorf("clusterTrees = %v, want [a]", got)
	}
	if err := tree.removeTree("/cnb-a"); err != nil {
		t.Fatal(err)
	}
	for _, d := range tree.dirs {
		if _, err := os.Stat(filepath.Join(d, "cnb-a")); !os.IsNotExist(err) {
			t.Errorf("%s/cnb-a still there: %v", d, err)
		}
	}
	if _, err := os.Stat(filepath.Join(base, "pids", "not-ours")); err != nil {
		t.Errorf("removeTree touched a directory that is not the cluster's: %v", err)
	}
}

// TestDetectCgroupsOnThisHost checks the layout detected here against the mount table.
func TestDetectCgroupsOnThisHost(t *testing.T) {
	tree, err := detectCgroups()
	if err != nil {
		t.Skipf("no cgroups here: %v", err)
	}
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	v1 := strings.Contains(string(data), " - cgroup ")
	switch {
	case v1 && tree.mode == cgroups.Unified, !v1 && tree.mode != cgroups.Unified:
		t.Errorf("mode %s, but v1 hierarchies mounted: %v", tree, v1)
	case tree.mode == cgroups.Unified && (len(tree.dirs) != 1 || tree.unified != cgroupMount):
		t.Errorf("unified host: dirs %v, unified %q", tree.dirs, tree.unified)
	case tree.mode != cgroups.Unified && tree.unified != "":
		t.Errorf("%s host: unified %q, want none (its cgroup2 holds no controllers)", tree, tree.unified)
	}
}

// TestCheckHostHere runs every host check on this machine, which runs the local cluster, so
// all must pass; the feature probe runs in a namespace of its own and must leave no link behind.
func TestCheckHostHere(t *testing.T) {
	if os.Geteuid() != 0 {
		if _, err := checkHost(Options{LocalConfig: lab.LocalConfig{ProxyMode: "nftables", Datapath: "bridge", Nodes: 2}}); err == nil || !strings.Contains(err.Error(), "root") {
			t.Fatalf("non-root: err = %v, want one asking for root", err)
		}
		return
	}
	tree, err := checkHost(Options{LocalConfig: lab.LocalConfig{ProxyMode: "nftables", Datapath: "cilium-vxlan", Nodes: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if len(tree.dirs) == 0 {
		t.Error("checkHost returned no cgroup hierarchy")
	}
	links, _ := os.ReadDir("/sys/class/net")
	for _, l := range links {
		if strings.HasPrefix(l.Name(), "cnbp") {
			t.Errorf("the feature probe left %s on the host", l.Name())
		}
	}
}
