package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/cluster/datapath"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/tuning"
	"golang.org/x/sys/unix"
	"sigs.k8s.io/yaml"
)

// nodeDir holds everything of node i: runtime root and state, kubelet root, configs, sockets.
func (c *creator) nodeDir(i int) string {
	return filepath.Join(c.layout.Dir(c.spec.Name), "nodes", c.spec.NodeName(i))
}

func (c *creator) containerdSocket(i int) string {
	return filepath.Join(c.nodeDir(i), "containerd.sock")
}

// criSocket is node i's CRI endpoint, the kubelet's runtime.
func (c *creator) criSocket(i int) string {
	if c.spec.ContainerRuntime() == lab.CRICrio {
		return c.crioSocket(i)
	}
	return c.containerdSocket(i)
}

// startRuntime starts node i's CRI with the cluster's images in its storage.
func (c *creator) startRuntime(ctx context.Context, i int) error {
	if c.spec.ContainerRuntime() == lab.CRICrio {
		return c.startCRIO(ctx, i)
	}
	if err := c.startContainerd(ctx, i); err != nil {
		return err
	}
	return c.importImages(ctx, i, c.archives...)
}

// dpNode describes node i to the datapath.
func (c *creator) dpNode(i int) datapath.Node {
	p := c.spec.Plan()
	n := datapath.Node{
		Name: c.spec.NodeName(i), Netns: c.spec.NodeNetns(i), Uplink: nodeUplink,
		IP: p.NodeIP(i), PodCIDR: p.PodCIDR(i), Gateway: p.PodGateway(i),
		CNIConfDir: filepath.Join(c.nodeDir(i), "cni", "net.d"),
		DataDir:    filepath.Join(c.nodeDir(i), "cni"),
	}
	if p.HasIPv6() {
		n.IP6, n.PodCIDR6, n.Gateway6 = p.NodeIP6(i), p.PodCIDR6(i), p.PodGateway6(i)
	}
	return n
}

// startContainerd writes node i's containerd config and starts it; it returns once the
// runtime answers.
func (c *creator) startContainerd(ctx context.Context, i int) error {
	dir := c.nodeDir(i)
	if err := os.MkdirAll(filepath.Join(dir, "cni", "net.d"), 0o755); err != nil {
		return fmt.Errorf("node %d: %w", i, err)
	}
	if err := c.mountRuntimeStorage(filepath.Join(dir, "containerd", "root")); err != nil {
		return fmt.Errorf("node %d: %w", i, err)
	}
	runtimes, err := c.runtimeSections(i)
	if err != nil {
		return err
	}
	if err := c.writeRegistryHosts(i); err != nil {
		return err
	}
	conf := containerdConfig(dir, c.containerdSocket(i), c.cniBinDir(), c.spec.Images.Pause, runtimes, c.certsDir(i))
	confPath := filepath.Join(dir, "containerd.toml")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		return fmt.Errorf("write containerd config of node %d: %w", i, err)
	}
	cniCache := filepath.Join(dir, "cni", "cache")
	if err := os.MkdirAll(cniCache, 0o700); err != nil {
		return fmt.Errorf("node %d: %w", i, err)
	}
	r, err := c.start(ctx, daemon{
		name: c.spec.NodeName(i) + "-containerd", netns: c.spec.NodeNetns(i),
		cgroup: c.spec.CgroupRoot() + "/" + c.spec.NodeName(i) + "/system",
		argv: append([]string{"unshare", "--mount", "--propagation", "slave", "sh", "-c", c.tmpMount() + runtimeMounts, "cnb-runtime", cniCache},
			c.bin("containerd"), "--config", confPath),
		// The runc shim is looked up in PATH, so the cached binaries go first.
		env: []string{"PATH=" + filepath.Dir(c.bin("containerd")) + ":" + os.Getenv("PATH")},
	})
	if err != nil {
		return err
	}
	return c.poll(ctx, "containerd of "+c.spec.NodeName(i), c.stepTimeout(6, 30*time.Second), func() (bool, error) {
		return c.ctr(ctx, i, "version") == nil, r.exited()
	})
}

// runtimeMounts runs in the node runtime's own mount namespace before containerd starts. The
// shims put their sockets in the fixed /run/containerd/s and libcni its cache in the fixed
// /var/lib/cni: a private /run and a per-node CNI cache keep both off the host. Every mount
// the runtime makes (rootfs overlays, shm, pod netns) lives and dies with this namespace; the
// kubelet's volume mounts still reach it because the state directory is a shared mount. The
// script starts with the creator's tmpMount.
const runtimeMounts = `mount -t tmpfs -o mode=0755 cnb-run /run && mount --bind "$1" /var/lib/cni && shift && exec "$@"`

// tmpMount is the start of a node runtime's mount script that gives it a /tmp of its own:
// crun leaves empty crun.XXXXXX files there, most likely when a delete kills it mid-start (20
// of them had piled up in the host's /tmp over a day of test runs). It is empty when the
// cluster's binaries or state lie under the host's /tmp (a test's temporary directory), which
// a private /tmp would hide from the runtime.
func (c *creator) tmpMount() string {
	for _, p := range []string{c.cache.BinDir(), c.layout.Dir(c.spec.Name)} {
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

// containerdConfig renders a containerd 2.x config that keeps every path inside the node's
// directory and disables the plugins that would write to host-wide locations; runtimes is the
// handlers' table entries (runtimeSections); certs is the registries' configuration
// (hosts.toml files), which replaces the host's /etc/containerd/certs.d.
func containerdConfig(dir, socket, cniBin, pause, runtimes, certs string) string {
	return fmt.Sprintf(`version = 3
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.nri.v1.nri", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.blockfile", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing", "io.containerd.snapshotter.v1.erofs", "io.containerd.differ.v1.erofs"]

[grpc]
  address = %[3]q

[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = %[5]q
  [plugins."io.containerd.cri.v1.images".registry]
    config_path = %[8]q

[plugins."io.containerd.cri.v1.runtime"]
  # Lowering a container's oom_score_adj needs CAP_SYS_RESOURCE, which root lacks here.
  restrict_oom_score_adj = true
  enable_selinux = false
  # Pod network namespaces are mounted below the node's state, not in the host's /run/netns.
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = [%[4]q]
    conf_dir = %[6]q
    max_conf_num = 1
    # The runtime configures pods' loopback itself; no loopback plugin and no cache entry for it.
    use_internal_loopback = true
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
%[7]s
[plugins."io.containerd.grpc.v1.cri"]
  stream_server_address = "127.0.0.1"
`, filepath.Join(dir, "containerd", "root"), filepath.Join(dir, "containerd", "state"), socket,
		cniBin, pause, filepath.Join(dir, "cni", "net.d"), runtimes, certs)
}

// findBundle sets $bundle from an OCI runtime's command line (create and run name it), for the
// wrappers that adjust a bundle before the runtime reads it.
const findBundle = `prev=
for a in "$@"; do
	case "$prev" in --bundle|-b) bundle=$a ;; esac
	case "$a" in --bundle=*) bundle=${a#--bundle=} ;; esac
	prev=$a
done
`

// crunWrapper is the crun runtime handler. crun 1.8 (Debian 12) refuses this host's hybrid
// cgroup layout, so it runs in a private mount namespace where the cgroup2 mount is detached;
// and it accepts only OCI spec 1.0.x, while containerd 2.x writes a newer version, so create
// pins the bundle's version (the cluster's pods use no field newer than 1.0).
const crunWrapper = "#!/bin/sh\n" + findBundle + `if [ -n "$bundle" ] && [ -f "$bundle/config.json" ]; then
	sed -i 's/"ociVersion":"[^"]*"/"ociVersion":"1.0.2"/' "$bundle/config.json" || exit 1
fi
exec unshare --mount --propagation private sh -c 'umount /sys/fs/cgroup/unified 2>/dev/null; exec crun "$@"' crun "$@"
`

// writeCrunWrapper writes the crun runtime handler into the cluster's directory.
func (c *creator) writeCrunWrapper() (string, error) {
	path := filepath.Join(c.layout.Dir(c.spec.Name), "bin", "crun")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("write crun wrapper: %w", err)
	}
	if err := os.WriteFile(path, []byte(crunWrapper), 0o755); err != nil {
		return "", fmt.Errorf("write crun wrapper: %w", err)
	}
	return path, nil
}

// ctr runs a ctr command against node i's containerd.
func (c *creator) ctr(ctx context.Context, i int, args ...string) error {
	full := append([]string{"--address", c.containerdSocket(i), "--namespace", "k8s.io"}, args...)
	return runFor(ctx, c.stepTimeout(3, time.Minute), c.bin("ctr"), full...)
}

// importImages loads image archives into node i's runtime.
func (c *creator) importImages(ctx context.Context, i int, archives ...string) error {
	for _, a := range archives {
		if err := c.ctr(ctx, i, "images", "import", "--snapshotter", "overlayfs", a); err != nil {
			return fmt.Errorf("import %s into %s: %w", filepath.Base(a), c.spec.NodeName(i), err)
		}
	}
	return nil
}

// startKubelet writes node i's kubelet configuration and starts it.
func (c *creator) startKubelet(ctx context.Context, i int) error {
	s, p := c.spec, c.spec.Plan()
	dir, pkiDir, node := c.nodeDir(i), c.layout.pkiDir(s.Name), s.NodeName(i)
	// An IPv6 node is reached at its IPv6 address: the kubelet then listens on both.
	address := p.NodeIP(i).String()
	if p.HasIPv6() {
		address = p.ListenAll()
	}
	cfg := map[string]any{
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
		"tlsCertFile":              filepath.Join(pkiDir, "kubelet-"+node+".crt"),
		"tlsPrivateKeyFile":        filepath.Join(pkiDir, "kubelet-"+node+".key"),
		"cgroupDriver":             "cgroupfs",
		"cgroupRoot":               s.CgroupRoot() + "/" + node,
		"failSwapOn":               false,
		"failCgroupV1":             false,
		"containerRuntimeEndpoint": "unix://" + c.criSocket(i),
		"clusterDomain":            "cluster.local",
		"clusterDNS":               []string{p.DNSServiceIPs()[0].String()},
		// A resolv.conf with no nameserver: pods must never reach the host's resolver.
		"resolvConf": c.resolvConf(),
		"podLogsDir": filepath.Join(dir, "pod-logs"),
		// The tuning profiles' sysctls that Kubernetes does not call safe: each lives in the
		// pod's own network namespace (internal/tuning).
		"allowedUnsafeSysctls": tuning.UnsafeAllowed(),
		// The default, /usr/libexec/kubernetes/..., would be created on the host.
		"volumePluginDir": filepath.Join(dir, "volume-plugins"),
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
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("encode kubelet config of %s: %w", node, err)
	}
	confPath := filepath.Join(dir, "kubelet.yaml")
	if err := os.WriteFile(confPath, data, 0o644); err != nil {
		return fmt.Errorf("write kubelet config of %s: %w", node, err)
	}
	sysctls := filepath.Join(dir, "kubelet-sysctl")
	if err := writeKernelTunableCopies(sysctls); err != nil {
		return fmt.Errorf("kubelet of %s: %w", node, err)
	}
	_, err = c.start(ctx, daemon{
		name: node + "-kubelet", netns: s.NodeNetns(i), cgroup: s.CgroupRoot() + "/" + node + "/system",
		argv: []string{"unshare", "--mount", "--propagation", "unchanged", "sh", "-c", kubeletMounts, "cnb-kubelet", sysctls, c.kube("kubelet"), "--config=" + confPath,
			"--kubeconfig=" + filepath.Join(pkiDir, "kubelet-"+node+".kubeconfig"),
			"--root-dir=" + filepath.Join(dir, "kubelet"), "--hostname-override=" + node,
			"--node-ip=" + joined(p.NodeIPs(i)), "--v=1",
			// The kubelet reports a pod's stats only from its second cAdvisor sample; at the
			// default 10 s a run waited 10-15 s per target for its pods' memory. Dynamic
			// housekeeping still backs idle containers off to 15 s.
			"--housekeeping-interval=2s"},
	})
	return err
}

// kubeProxyConfig is the cluster's kube-proxy configuration, the part every node shares.
func (c *creator) kubeProxyConfig() map[string]any {
	return map[string]any{
		"apiVersion":         "kubeproxy.config.k8s.io/v1alpha1",
		"kind":               "KubeProxyConfiguration",
		"clientConnection":   map[string]any{"kubeconfig": filepath.Join(c.layout.pkiDir(c.spec.Name), "kube-proxy.kubeconfig")},
		"mode":               c.spec.ProxyMode,
		"clusterCIDR":        joined(c.spec.Plan().ClusterCIDRs()),
		"healthzBindAddress": "127.0.0.1:10256",
		"metricsBindAddress": "127.0.0.1:10249",
		// nf_conntrack_max is host-wide: leave it, and the timeouts, as they are.
		"conntrack": map[string]any{"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"},
	}
}

// startKubeProxy writes node i's kube-proxy configuration and starts it.
func (c *creator) startKubeProxy(ctx context.Context, i int) error {
	s := c.spec
	node := s.NodeName(i)
	cfg := c.kubeProxyConfig()
	cfg["hostnameOverride"] = node
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("encode kube-proxy config of %s: %w", node, err)
	}
	confPath := filepath.Join(c.nodeDir(i), "kube-proxy.yaml")
	if err := os.WriteFile(confPath, data, 0o644); err != nil {
		return fmt.Errorf("write kube-proxy config of %s: %w", node, err)
	}
	_, err = c.start(ctx, daemon{
		name: node + "-kube-proxy", netns: s.NodeNetns(i), cgroup: s.CgroupRoot() + "/" + node + "/system",
		argv: []string{c.kube("kube-proxy"), "--config=" + confPath, "--v=1"},
	})
	return err
}

// resolvConf is the cluster's resolv.conf for the kubelets: search and options only.
func (c *creator) resolvConf() string {
	return filepath.Join(c.layout.Dir(c.spec.Name), "resolv.conf")
}

func (c *creator) writeResolvConf() error {
	if err := os.WriteFile(c.resolvConf(), []byte("options ndots:5\n"), 0o644); err != nil {
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
func (c *creator) mountRuntimeStorage(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if c.spec.ImageStore != ImageStoreTmpfs {
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
func (c *creator) shareStateDir(context.Context) error {
	dir := c.layout.Dir(c.spec.Name)
	if err := unix.Mount(dir, dir, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind-mount %s: %w", dir, err)
	}
	if err := unix.Mount("", dir, "", unix.MS_SHARED|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("make %s shared: %w", dir, err)
	}
	return nil
}
