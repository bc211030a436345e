package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/kube"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Info describes one cluster for `cluster list`.
type Info struct {
	Name       string        `json:"name"`
	Nodes      int           `json:"nodes"`
	Datapath   string        `json:"datapath"`
	ProxyMode  string        `json:"proxyMode"`
	Kubernetes string        `json:"kubernetes"`
	Cgroups    string        `json:"cgroups,omitempty"`
	Subnet     string        `json:"subnet"`
	Status     string        `json:"status"`
	Age        time.Duration `json:"age"`
	Health     string        `json:"health"`
	Kubeconfig string        `json:"kubeconfig"`
}

// List describes every cluster with a state directory, probing each one's health.
func List(ctx context.Context, l Layout) ([]Info, error) {
	names, err := l.Names()
	if err != nil {
		return nil, err
	}
	infos := make([]Info, 0, len(names))
	for _, n := range names {
		s, err := l.ReadSpec(n)
		if err != nil {
			infos = append(infos, Info{Name: n, Status: "broken", Health: err.Error()})
			continue
		}
		infos = append(infos, Info{
			Name: n, Nodes: s.Nodes, Datapath: s.Datapath, ProxyMode: s.ProxyMode,
			Kubernetes: s.Kubernetes, Cgroups: s.Cgroups, Subnet: subnets(s.Plan()), Status: s.Status, Age: time.Since(s.Created),
			Health: health(ctx, l, s), Kubeconfig: l.Kubeconfig(n),
		})
	}
	return infos, nil
}

// subnets is the cluster's IPv4 block, with its IPv6 one where it has IPv6.
func subnets(p Plan) string {
	if p.HasIPv6() {
		return p.Block().String() + "," + p.Block6().String()
	}
	return p.Block().String()
}

// health says whether the cluster's daemons run and its nodes are Ready.
func health(ctx context.Context, l Layout, s Spec) string {
	if s.Status != StatusReady {
		return s.Status
	}
	if dead := NotRunning(l, s); len(dead) > 0 {
		return "degraded: not running: " + strings.Join(dead, ", ")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", l.Kubeconfig(s.Name))
	if err != nil {
		return "unknown: " + err.Error()
	}
	cfg.Timeout = 3 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "unknown: " + err.Error()
	}
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return "down: API server: " + err.Error()
	}
	ready := 0
	for _, n := range nodes.Items {
		if kube.NodeReady(n) {
			ready++
		}
	}
	if ready < s.Nodes {
		return fmt.Sprintf("degraded: %d/%d nodes Ready", ready, s.Nodes)
	}
	return fmt.Sprintf("healthy: %d/%d nodes Ready", ready, s.Nodes)
}

// NotRunning names the cluster's daemons (as "node2-kubelet", "kube-apiserver") whose recorded
// process is gone: they are not restarted, so a run on the cluster can only report them.
func NotRunning(l Layout, s Spec) []string {
	var dead []string
	runDir := filepath.Join(l.Dir(s.Name), "run")
	entries, _ := os.ReadDir(runDir)
	for _, e := range entries {
		pid := readPid(filepath.Join(runDir, e.Name()))
		if pid == 0 || !alive(pid) || !inCgroup(pid, s.CgroupRoot()) {
			dead = append(dead, strings.TrimSuffix(e.Name(), ".pid"))
		}
	}
	return dead
}

// ControlPlane reports whether a daemon named by NotRunning serves the whole cluster: without
// it nothing more can be measured or removed through the API.
func ControlPlane(daemon string) bool {
	return daemon == "kube-apiserver" || daemon == "etcd"
}
