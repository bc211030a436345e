package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// containerd is the nodes' runtime unless the cluster runs CRI-O: one containerd a node, each
// with every path inside the node's directory.
type containerd struct {
	nodeEnv
	// archives are the image archives every node imports.
	archives []string
}

func (containerd) socket(n node) string { return filepath.Join(n.dir, "containerd.sock") }

// certsDir is node n's containerd registry configuration (config_path): inside the node's
// directory, so that no host-wide registry configuration applies to the lab.
func (containerd) certsDir(n node) string { return filepath.Join(n.dir, "containerd", "certs.d") }

// start writes node n's containerd config, starts it, and imports the cluster's images once
// the runtime answers.
func (c containerd) start(ctx context.Context, n node) error {
	if err := os.MkdirAll(n.cniConfDir(), 0o755); err != nil {
		return fmt.Errorf("node %d: %w", n.index, err)
	}
	if err := mountRuntimeStorage(filepath.Join(n.dir, "containerd", "root"), c.spec.ImageStore == ImageStoreTmpfs); err != nil {
		return fmt.Errorf("node %d: %w", n.index, err)
	}
	runtimes, err := runtimeSections(c.spec, c.layout, c.bins, n)
	if err != nil {
		return err
	}
	if c.spec.Registry {
		if err := writeRegistryHosts(c.certsDir(n), c.spec.Plan().RegistryAddr(), c.layout.CAFile(c.spec.Name)); err != nil {
			return fmt.Errorf("node %d: %w", n.index, err)
		}
	}
	conf := containerdConfig(n.dir, c.socket(n), c.bins.cniDir(), c.spec.Images.Pause, runtimes, c.certsDir(n))
	confPath := filepath.Join(n.dir, "containerd.toml")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		return fmt.Errorf("write containerd config of node %d: %w", n.index, err)
	}
	cniCache := filepath.Join(n.dir, "cni", "cache")
	if err := os.MkdirAll(cniCache, 0o700); err != nil {
		return fmt.Errorf("node %d: %w", n.index, err)
	}
	r, err := c.procs.start(daemon{
		name: n.name + "-containerd", netns: n.netns, cgroup: n.cgroup,
		argv: append([]string{"unshare", "--mount", "--propagation", "slave", "sh", "-c", c.tmpMount() + runtimeMounts, "cnb-runtime", cniCache},
			c.bins.bin("containerd"), "--config", confPath),
		// The runc shim is looked up in PATH, so the cached binaries go first.
		env: []string{"PATH=" + filepath.Dir(c.bins.bin("containerd")) + ":" + os.Getenv("PATH")},
	})
	if err != nil {
		return err
	}
	err = c.procs.poll(ctx, "containerd of "+n.name, c.waits.step(6, 30*time.Second), func() (bool, error) {
		return c.ctr(ctx, n, "version") == nil, r.exited()
	})
	if err != nil {
		return err
	}
	return c.importImages(ctx, n)
}

// ctr runs a ctr command against node n's containerd.
func (c containerd) ctr(ctx context.Context, n node, args ...string) error {
	full := append([]string{"--address", c.socket(n), "--namespace", "k8s.io"}, args...)
	return runFor(ctx, c.waits.step(3, time.Minute), c.bins.bin("ctr"), full...)
}

// importImages loads the cluster's image archives into node n's runtime.
func (c containerd) importImages(ctx context.Context, n node) error {
	for _, a := range c.archives {
		if err := c.ctr(ctx, n, "images", "import", "--snapshotter", "overlayfs", a); err != nil {
			return fmt.Errorf("import %s into %s: %w", filepath.Base(a), n.name, err)
		}
	}
	return nil
}

// runtimeMounts runs in the node runtime's own mount namespace before containerd starts. The
// shims put their sockets in the fixed /run/containerd/s and libcni its cache in the fixed
// /var/lib/cni: a private /run and a per-node CNI cache keep both off the host. Every mount
// the runtime makes (rootfs overlays, shm, pod netns) lives and dies with this namespace; the
// kubelet's volume mounts still reach it because the state directory is a shared mount. The
// script starts with tmpMount.
const runtimeMounts = `mount -t tmpfs -o mode=0755 cnb-run /run && mount --bind "$1" /var/lib/cni && shift && exec "$@"`

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
