//go:build e2e

package e2e

import (
	"bytes"
	"maps"
	"os"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/internal/testsupport/hostsnap"
)

// laneEnv names the lane of tests this process belongs to when several `go test` processes run
// the end-to-end tests at once: each sets its own value, and every process the tests start
// (cnibench, and the daemons of the clusters it creates) inherits it. Unset, the tests run
// alone and every host difference is theirs.
const laneEnv = "CNB_E2E_LANE"

// hostShot is a host snapshot and, when tests run in lanes, the clusters then on the host that
// are not this lane's: what changes of theirs the host shows is not this test's.
type hostShot struct {
	hostsnap.Snapshot
	others otherClusters // nil outside lanes
}

// otherLane reports whether the live process pid belongs to another lane of tests: its
// environment names a lane other than this process's.
func otherLane(pid string) bool {
	lane := laneOf(pid)
	return lane != "" && lane != os.Getenv(laneEnv)
}

// laneOf is the lane the environment of process pid names, or "".
func laneOf(pid string) string {
	env, err := os.ReadFile("/proc/" + pid + "/environ")
	if err != nil {
		return ""
	}
	for _, kv := range bytes.Split(env, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte(laneEnv+"=")); ok {
			return string(v)
		}
	}
	return ""
}

// clusterLanes maps each cluster with a live process to the lanes its processes name.
func clusterLanes() map[string]map[string]bool {
	out := map[string]map[string]bool{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		cg, err := os.ReadFile("/proc/" + e.Name() + "/cgroup")
		if err != nil {
			continue
		}
		name := clusterOfCgroup(string(cg))
		if name == "" {
			continue
		}
		if out[name] == nil {
			out[name] = map[string]bool{}
		}
		out[name][laneOf(e.Name())] = true
	}
	return out
}

// clusterOfCgroup is the cluster whose cgroup tree (/cnb-NAME/...) the contents of a
// /proc/PID/cgroup file name, or "".
func clusterOfCgroup(cg string) string {
	for _, line := range strings.Split(cg, "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[2], "/") {
			if name, ok := strings.CutPrefix(c, "cnb-"); ok && name != "" {
				return name
			}
		}
	}
	return ""
}

// laneOthers lists, when tests run in lanes, the clusters that are not this lane's. With
// existing, every cluster on the host but those a process of this lane runs in: a test takes
// its first snapshot before it creates a cluster, so the others' include those being created
// or deleted, which have no process yet or any more. Without, only the clusters another lane's
// processes run in: a cluster without processes then may be this test's leftover.
func laneOthers(t *testing.T, existing bool) otherClusters {
	t.Helper()
	mine := os.Getenv(laneEnv)
	if mine == "" {
		return nil
	}
	lanes := clusterLanes()
	var names []string
	if existing {
		all, err := cluster.DefaultLayout().Names()
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range all {
			if !lanes[n][mine] {
				names = append(names, n)
			}
		}
	} else {
		for n, ls := range lanes {
			for l := range ls {
				if l != "" && l != mine {
					names = append(names, n)
					break
				}
			}
		}
	}
	return clustersNamed(names)
}

// merge is o with the clusters of more added.
func (o otherClusters) merge(more otherClusters) otherClusters {
	if o == nil && more == nil {
		return nil
	}
	out := maps.Clone(o)
	if out == nil {
		out = otherClusters{}
	}
	maps.Copy(out, more)
	return out
}
