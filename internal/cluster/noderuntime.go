package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cnibench/cnibench/internal/cluster/datapath"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/tuning"
	"golang.org/x/sys/unix"
	"sigs.k8s.io/yaml"
)

// node is one node of a cluster: its names, its daemons' cgroup and its directory.
type node struct {
	index  int
	name   string // its Kubernetes name
	netns  string
	cgroup string // its daemons' (the kubelet's pods live beside it, below the node's cgroup)
	// dir holds everything of the node: runtime root and state, kubelet root, configs, sockets.
	dir string
}

// nodeOf is node i (1-based) of the cluster.
func nodeOf(s Spec, l Layout, i int) node {
	return node{index: i, name: s.NodeName(i), netns: s.NodeNetns(i), cgroup: s.CgroupRoot() + "/" + s.NodeName(i) + "/system",
		dir: filepath.Join(l.Dir(s.Name), "nodes", s.NodeName(i))}
}

// cniConfDir holds the node's CNI configuration, which its datapath writes.
func (n node) cniConfDir() string { return filepath.Join(n.dir, "cni", "net.d") }

// handlerRoot is where a runtime handler keeps its containers' state on the node: under the
// node's directory, so that it is removed with the cluster and tests can find each container
// there.
func (n node) handlerRoot(handler string) string { return filepath.Join(n.dir, handler) }

// dpNode describes a node to the datapath.
func dpNode(s Spec, n node) datapath.Node {
	p, i := s.Plan(), n.index
	dn := datapath.Node{
		Name: n.name, Netns: n.netns, Uplink: nodeUplink,
		IP: p.NodeIP(i), PodCIDR: p.PodCIDR(i), Gateway: p.PodGateway(i), Secondary: p.SecondaryCIDR(i),
		CNIConfDir: n.cniConfDir(),
		DataDir:    filepath.Join(n.dir, "cni"),
	}
	if p.HasIPv6() {
		dn.IP6, dn.PodCIDR6, dn.Gateway6 = p.NodeIP6(i), p.PodCIDR6(i), p.PodGateway6(i)
	}
	return dn
}

// nodeRuntime is the nodes' CRI.
type nodeRuntime interface {
	// socket is a node's CRI endpoint, the kubelet's runtime.
	socket(n node) string
	// start starts a node's runtime with the cluster's images in its storage.
	start(ctx context.Context, n node) error
}

// newNodeRuntime is the cluster's CRI, whose nodes import archives.
func newNodeRuntime(env nodeEnv, archives []string) nodeRuntime {
	if env.spec.ContainerRuntime() == lab.CRICrio {
		return crio{nodeEnv: env, archives: archives}
	}
	return containerd{nodeEnv: env, archives: archives}
}

// nodeEnv is what starting a node's daemons needs of the cluster being created.
type nodeEnv struct {
	spec   Spec
	layout Layout
	bins   binPaths
	procs  *supervisor
	waits  waits
}

// tmpMount is the start of a node runtime's mount script that gives it a /tmp of its own:
// crun leaves empty crun.XXXXXX files there, most likely when a delete kills it mid-start (20
// of them had piled up in the host's /tmp over a day of test runs). It is empty when the
// cluster's binaries or state lie under the host's /tmp (a test's temporary directory), which
// a private /tmp would hide from the runtime.
func (e nodeEnv) tmpMount() string {
	for _, p := range []string{e.bins.cache.BinDir(), e.layout.Dir(e.spec.Name)} {
		if rel, err := filepath.Rel("/tmp", p); err == nil && !strings.HasPrefix(rel, "..") {
			return ""
		}
	}
	return "mount -t tmpfs -o mode=1777 cnb-tmp /tmp && "
}

// kubeletMounts runs in the kubelet's own mount namespace. The kubelet writes to two fixed
// host paths whatever its --root-dir: symlinks in /var/log/containers and its device-plugin
// socket in /var/lib/kubelet/device-plugins (shared by every kubelet on the host). Private
// tmpfs mounts keep both off the host. The namespace keeps the shared state-directory mount
// shared, so the volumes the kubelet mounts there still reach the node's runtime. It starts
// with kubeletSysctlMounts, whose directory is its first argument.
const kubeletMounts = kubeletSysctlMounts + `mount -t tmpfs -o mode=0755 cnb-kubelet /var/lib/kubelet && mount -t tmpfs -o mode=0755 cnb-logs /var/log/containers && exec "$@"`

// startKubelet writes node n's kubelet configuration and starts it on the CRI at criSocket.
func (e nodeEnv) startKubelet(n node, criSocket string) error {
	s, p := e.spec, e.spec.Plan()
	pkiDir := e.layout.pkiDir(s.Name)
	data, err := yaml.Marshal(e.kubeletConfig(n, criSocket))
	if err != nil {
		return fmt.Errorf("encode kubelet config of %s: %w", n.name, err)
	}
	confPath := filepath.Join(n.dir, "kubelet.yaml")
	if err := os.WriteFile(confPath, data, 0o644); err != nil {
		return fmt.Errorf("write kubelet config of %s: %w", n.name, err)
	}
	sysctls := filepath.Join(n.dir, "kubelet-sysctl")
	if err := writeKernelTunableCopies(sysctls); err != nil {
		return fmt.Errorf("kubelet of %s: %w", n.name, err)
	}
	_, err = e.procs.start(daemon{
		name: n.name + "-kubelet", netns: n.netns, cgroup: n.cgroup,
		argv: []string{"unshare", "--mount", "--propagation", "unchanged", "sh", "-c", kubeletMounts, "cnb-kubelet", sysctls, e.bins.kube("kubelet"), "--config=" + confPath,
			"--kubeconfig=" + filepath.Join(pkiDir, "kubelet-"+n.name+".kubeconfig"),
			"--root-dir=" + filepath.Join(n.dir, "kubelet"), "--hostname-override=" + n.name,
			"--node-ip=" + joined(p.NodeIPs(n.index)), "--v=1",
			// The kubelet reports a pod's stats only from its second cAdvisor sample; at the
			// default 10 s a run waited 10-15 s per target for its pods' memory. Dynamic
			// housekeeping still backs idle containers off to 15 s.
			"--housekeeping-interval=2s"},
	})
	return err
}

// kubeletConfig is node n's KubeletConfiguration.
func (e nodeEnv) kubeletConfig(n node, criSocket string) map[string]any {
	s, p := e.spec, e.spec.Plan()
	pkiDir := e.layout.pkiDir(s.Name)
	// An IPv6 node is reached at its IPv6 address: the kubelet then listens on both.
	address := p.NodeIP(n.index).String()
	if p.HasIPv6() {
		address = p.ListenAll()
	}
	return map[string]any{
		"apiVersion": "kubelet.config.k8s.io/v1beta1",
		"kind":       "KubeletConfiguration",
		"authentication": map[string]any{
			"anonymous": map[string]any{"enabled": false},
			"webhook":   map[string]any{"enabled": true},
			"x509":      map[string]any{"clientCAFile": filepath.Join(pkiDir, "ca.crt")},
		},
		"authorization":            map[string]any{"mode": "Webhook"},
		"address":                  address,
		"readOnlyPort":             0,
		"healthzBindAddress":       "127.0.0.1",
		"tlsCertFile":              filepath.Join(pkiDir, "kubelet-"+n.name+".crt"),
		"tlsPrivateKeyFile":        filepath.Join(pkiDir, "kubelet-"+n.name+".key"),
		"cgroupDriver":             "cgroupfs",
		"cgroupRoot":               s.CgroupRoot() + "/" + n.name,
		"failSwapOn":               false,
		"failCgroupV1":             false,
		"containerRuntimeEndpoint": "unix://" + criSocket,
		"clusterDomain":            "cluster.local",
		"clusterDNS":               []string{p.DNSServiceIPs()[0].String()},
		// A resolv.conf with no nameserver: pods must never reach the host's resolver.
		"resolvConf": e.layout.resolvConf(s.Name),
		"podLogsDir": filepath.Join(n.dir, "pod-logs"),
		// The tuning profiles' sysctls that Kubernetes does not call safe: each lives in the
		// pod's own network namespace (internal/tuning).
		"allowedUnsafeSysctls": tuning.UnsafeAllowed(),
		// The default, /usr/libexec/kubernetes/..., would be created on the host.
		"volumePluginDir": filepath.Join(n.dir, "volume-plugins"),
		"oomScoreAdj":     0,
		// Local images are imported, never pulled: garbage collection must not remove them.
		"imageGCHighThresholdPercent": 100,
		"imageGCLowThresholdPercent":  99,
		"evictionHard": map[string]string{
			"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%", "nodefs.inodesFree": "1%",
		},
		"serializeImagePulls": false,
		// Room for the largest pairs level (suite.MaxPairs) on one node, within the /24 a
		// node's pods get addresses from.
		"maxPods": 250,
	}
}

// kubeProxyConfig is the cluster's kube-proxy configuration, the part every node shares.
func kubeProxyConfig(s Spec, l Layout) map[string]any {
	return map[string]any{
		"apiVersion":         "kubeproxy.config.k8s.io/v1alpha1",
		"kind":               "KubeProxyConfiguration",
		"clientConnection":   map[string]any{"kubeconfig": filepath.Join(l.pkiDir(s.Name), "kube-proxy.kubeconfig")},
		"mode":               s.ProxyMode,
		"clusterCIDR":        joined(s.Plan().ClusterCIDRs()),
		"healthzBindAddress": "127.0.0.1:10256",
		"metricsBindAddress": "127.0.0.1:10249",
		// nf_conntrack_max is host-wide: leave it, and the timeouts, as they are.
		"conntrack": map[string]any{"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"},
	}
}

// startKubeProxy writes node n's kube-proxy configuration and starts it.
func (e nodeEnv) startKubeProxy(n node) error {
	cfg := kubeProxyConfig(e.spec, e.layout)
	cfg["hostnameOverride"] = n.name
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("encode kube-proxy config of %s: %w", n.name, err)
	}
	confPath := filepath.Join(n.dir, "kube-proxy.yaml")
	if err := os.WriteFile(confPath, data, 0o644); err != nil {
		return fmt.Errorf("write kube-proxy config of %s: %w", n.name, err)
	}
	_, err = e.procs.start(daemon{
		name: n.name + "-kube-proxy", netns: n.netns, cgroup: n.cgroup,
		argv: []string{e.bins.kube("kube-proxy"), "--config=" + confPath, "--v=1"},
	})
	return err
}

// resolvConf is the cluster's resolv.conf for the kubelets: search and options only.
func (l Layout) resolvConf(name string) string { return filepath.Join(l.Dir(name), "resolv.conf") }

func writeResolvConf(path string) error {
	if err := os.WriteFile(path, []byte("options ndots:5\n"), 0o644); err != nil {
		return fmt.Errorf("write resolv.conf: %w", err)
	}
	return nil
}

// mountRuntimeStorage puts a node runtime's image store on a tmpfs. Every node imports the
// cluster's images at create (340 MB of tmpfs a node, blobs and unpacked layers), and on the
// host's disk the runtime's fsyncs made that import half of a create's "starting nodes" step
// (10.4 s against 5.8 s on tmpfs, two nodes at once); delete frees it at once instead of
// removing the files. The mount lives below the shared state directory, so it reaches the
// runtime's mount namespace, outlives a runtime that dies and is started again, and delete
// unmounts it with the rest (unmountAll). Options.RuntimeOnDisk keeps it on disk, for hosts
// short of memory. Pods' writable layers live there too: a workload that measures disk I/O
// must use a volume.
func mountRuntimeStorage(dir string, tmpfs bool) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if !tmpfs {
		return nil
	}
	if err := unix.Mount("cnb-runtime-store", dir, "tmpfs", 0, "mode=0700"); err != nil {
		return fmt.Errorf("mount a tmpfs for the runtime's images at %s: %w", dir, err)
	}
	return nil
}

// shareStateDir bind-mounts the cluster's state directory onto itself as a shared mount. The
// host's / is private, so without this the kubelet's volume mounts (service-account tokens,
// config maps) would not propagate into the node runtimes' mount namespaces.
func shareStateDir(_ context.Context, ac *actionContext) error {
	dir := ac.layout.Dir(ac.spec.Name)
	if err := unix.Mount(dir, dir, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind-mount %s: %w", dir, err)
	}
	if err := unix.Mount("", dir, "", unix.MS_SHARED|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("make %s shared: %w", dir, err)
	}
	return nil
}
