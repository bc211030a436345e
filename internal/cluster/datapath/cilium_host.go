package datapath

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cnibench/cnibench/internal/cgroupfs"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// cgroup2Mount finds where the cgroup2 hierarchy is mounted, which the cilium and calico
// datapaths need.
func cgroup2Mount() (string, error) {
	dir, err := cgroupfs.Cgroup2Mount()
	if err == nil && dir == "" {
		err = errors.New("no cgroup2 hierarchy is mounted under /sys/fs/cgroup; the cilium and calico datapaths need one")
	}
	return dir, err
}

// linkRuntimeRunDir makes /run/cilium in node n's runtime mount namespace a symlink to the
// node's Cilium run directory. The runtime starts the CNI plugin in that namespace, with no
// way to pass it CILIUM_SOCK, and the plugin then looks for its agent (and queues deletions)
// under the fixed /var/run/cilium. That namespace's /run is a private tmpfs of the node's
// runtime, so the link never touches the host and disappears with the runtime.
func linkRuntimeRunDir(c Cluster, n Node, run string) error {
	pidFile := filepath.Join(c.StateDir, "run", n.Name+"-containerd.pid")
	data, err := os.ReadFile(pidFile)
	if err != nil {
		return fmt.Errorf("find the container runtime of %s: %w", n.Name, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return fmt.Errorf("find the container runtime of %s: bad pid file %s", n.Name, pidFile)
	}
	runtimeRun := fmt.Sprintf("/proc/%d/root/run", pid)
	var host, private syscall.Stat_t
	if err := syscall.Stat("/run", &host); err != nil {
		return fmt.Errorf("stat /run: %w", err)
	}
	if err := syscall.Stat(runtimeRun, &private); err != nil {
		return fmt.Errorf("the container runtime of %s: %w", n.Name, err)
	}
	if host.Dev == private.Dev {
		// Linking here would create /run/cilium on the host itself.
		return fmt.Errorf("the container runtime of %s has no private /run; refusing to link /run/cilium", n.Name)
	}
	link := filepath.Join(runtimeRun, "cilium")
	if cur, err := os.Readlink(link); err == nil && cur == run {
		return nil
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("link /run/cilium of %s's runtime: %w", n.Name, err)
	}
	if err := os.Symlink(run, link); err != nil {
		return fmt.Errorf("link /run/cilium of %s's runtime: %w", n.Name, err)
	}
	return nil
}

// kubeClient builds a client from a kubeconfig file.
func kubeClient(kubeconfig string) (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	cfg.Timeout = 5 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", kubeconfig, err)
	}
	return cs, nil
}

// ensurePodCIDRs gives every registered node without a pod CIDR its planned ones, one per
// family of the cluster; it fails while a node has not registered yet.
func ensurePodCIDRs(ctx context.Context, cs kubernetes.Interface, c Cluster) error {
	for _, n := range c.Nodes {
		node, err := cs.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("get node %s: %w", n.Name, err)
		}
		if node.Spec.PodCIDR != "" {
			continue
		}
		cidrs := c.podCIDRs(n)
		patch, err := json.Marshal(map[string]any{"spec": map[string]any{"podCIDR": cidrs[0], "podCIDRs": cidrs}})
		if err != nil {
			return fmt.Errorf("encode pod CIDR patch: %w", err)
		}
		if _, err := cs.CoreV1().Nodes().Patch(ctx, n.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("set pod CIDR of %s: %w", n.Name, err)
		}
	}
	return nil
}

// ciliumClient talks to one agent's REST API over its unix socket.
type ciliumClient struct {
	socket string
}

// healthy reports nil when the agent says its own state is Ok (GET /v1/healthz, as
// `cilium-dbg status --brief` does).
func (a ciliumClient) healthy(ctx context.Context) error {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", a.socket)
	}}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://cilium/v1/healthz", nil)
	if err != nil {
		return fmt.Errorf("agent health: %w", err)
	}
	req.Header.Set("brief", "true")
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return fmt.Errorf("agent health: %w", err)
	}
	defer resp.Body.Close()
	var st struct {
		Cilium struct {
			State string `json:"state"`
			Msg   string `json:"msg"`
		} `json:"cilium"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return fmt.Errorf("agent health: HTTP %d: %w", resp.StatusCode, err)
	}
	if st.Cilium.State != "Ok" {
		return fmt.Errorf("agent health: %q %s", st.Cilium.State, st.Cilium.Msg)
	}
	return nil
}
