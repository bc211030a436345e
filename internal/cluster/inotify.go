package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/cnibench/cnibench/internal/setting"
)

// inotifyPerCluster and inotifyPerNode estimate the inotify instances a new cluster will hold,
// measured on running clusters of every datapath (flanneld, the cilium agents and CoreDNS hold
// none): the control plane 6 (API server 3, controller-manager 2, scheduler 1), each node 9
// (kubelet 6, containerd 2, kube-proxy 1), plus one each of headroom. Clusters that already
// run are counted, not estimated, so five two-node clusters (120) fit the default limit of 128.
const (
	inotifyPerCluster = 7
	inotifyPerNode    = 10
)

// checkInotify refuses a create that would exhaust root's inotify instances
// (fs.inotify.max_user_instances, 128 by default): kubelets then fail to start cAdvisor and
// never become Ready, which is hard to trace back. Raising the limit is the host owner's
// decision, so cnibench says what to run instead of changing the sysctl itself.
func checkInotify(nodes int) error {
	data, err := os.ReadFile("/proc/sys/fs/inotify/max_user_instances")
	if err != nil {
		return nil // no inotify limit to check
	}
	limit, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return nil
	}
	used := inotifyInstances(0)
	need := inotifyPerCluster + nodes*inotifyPerNode
	if used+need > limit {
		return &setting.Error{Name: "nodes", Value: strconv.Itoa(nodes), Want: fmt.Sprintf("the cluster needs about %d inotify instances but root has %d of %d left "+
			"(fs.inotify.max_user_instances); delete a cluster or raise the limit, e.g. sysctl -w fs.inotify.max_user_instances=1024 "+
			"(cnibench does not change host sysctls)", need, limit-used, limit)}
	}
	return nil
}

// inotifyInstances counts the inotify instances held by processes of a user.
func inotifyInstances(uid uint32) int {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	n := 0
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat(filepath.Join("/proc", p.Name()), &st) != nil || st.Uid != uid {
			continue
		}
		n += inotifyOf(p.Name())
	}
	return n
}

// inotifyOf counts the inotify instances one process holds.
func inotifyOf(pid string) int {
	fds, err := os.ReadDir(filepath.Join("/proc", pid, "fd"))
	if err != nil {
		return 0
	}
	n := 0
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc", pid, "fd", fd.Name())); err == nil && target == "anon_inode:inotify" {
			n++
		}
	}
	return n
}
