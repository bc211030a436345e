package cluster

import (
	"github.com/cnibench/cnibench/internal/lab"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// TestNotRunning checks that a daemon counts as gone when its pid is dead or belongs to a
// process outside the cluster's cgroup (a recycled pid), and that only the API server and
// etcd count as the control plane.
func TestNotRunning(t *testing.T) {
	l := Layout{Root: t.TempDir()}
	s := Spec{LocalConfig: lab.LocalConfig{Name: "t"}}
	run := filepath.Join(l.Dir(s.Name), "run")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	pids := map[string]string{
		"node1-kubelet":  "2147483647",              // above any pid_max
		"kube-apiserver": strconv.Itoa(os.Getpid()), // alive, but not in /cnb-t
		"node2-crio":     "not a pid",
	}
	for name, pid := range pids {
		if err := os.WriteFile(filepath.Join(run, name+".pid"), []byte(pid), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := NotRunning(l, s)
	slices.Sort(got)
	if want := []string{"kube-apiserver", "node1-kubelet", "node2-crio"}; !slices.Equal(got, want) {
		t.Errorf("NotRunning = %v, want %v", got, want)
	}
	if len(NotRunning(Layout{Root: t.TempDir()}, s)) != 0 {
		t.Error("a cluster without pid files has daemons not running")
	}
	for d, want := range map[string]bool{"kube-apiserver": true, "etcd": true, "node1-kubelet": false, "kube-scheduler": false} {
		if ControlPlane(d) != want {
			t.Errorf("ControlPlane(%s) = %v", d, !want)
		}
	}
}
