package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/cluster/binaries"
	"github.com/cnibench/cnibench/internal/lab"
)

// crio is the nodes' runtime in a CRI-O cluster: one CRI-O a node, each with every path
// inside the node's directory, and the cluster's images copied into its storage.
type crio struct {
	nodeEnv
	// archives are the image archives every node imports.
	archives []string
}

// crioDir holds everything of node n's CRI-O: configuration, image storage, state, sockets.
func crioDir(n node) string { return filepath.Join(n.dir, "crio") }

func (crio) socket(n node) string { return filepath.Join(crioDir(n), "crio.sock") }

// crioMounts runs in CRI-O's own mount namespace before it starts. CRI-O, conmon and runc
// write to fixed paths under /run; libcni keeps its cache in /var/lib/cni; and a resolver
// configuration without a nameserver means no lookup of CRI-O's ever leaves the lab. The
// node's own directory ($3) replaces /etc/containers, where CRI-O looks for a registry's CA
// (certs.d) and no setting moves it: the lab registry's CA is there, the host's are not. The
// script starts with tmpMount.
const crioMounts = `mount -t tmpfs -o mode=0755 cnb-run /run && mount --bind "$1" /var/lib/cni && mount --bind "$2" /etc/resolv.conf && mount --bind "$3" /etc/containers && shift 3 && exec "$@"`

// importMounts runs skopeo in a mount namespace of its own: containers/storage bind-mounts its
// overlay directory onto itself, which must not stay behind on the host, and keeps a blob
// cache under the fixed /var/lib/containers, which a tmpfs over /var/lib hides. The node's
// CRI-O directory ($1, the working directory, which keeps the original reachable) is bound
// back into place, since the state directory may itself live under /var/lib (not
// canonicalized: mount would resolve "." to its path, now inside the tmpfs).
const importMounts = `cd "$1" && mount -t tmpfs cnb-varlib /var/lib && mkdir -p "$1" && mount --no-canonicalize --rbind . "$1" && shift && exec "$@"`

// crioRuncWrapper is CRI-O's runc, with two rewrites of the bundle before runc reads it,
// where CRI-O (unlike containerd) has no setting. Root lacks CAP_SYS_RESOURCE here, so
// lowering a process's oom_score_adj fails: negative values become 0. And a hybrid host may
// bind hugetlb to the cgroup2 hierarchy (this kind of machine does), which CRI-O takes as
// hugetlb available while runc's cgroup v1 manager finds no hugetlb hierarchy and refuses the
// limits: they are dropped, as containerd drops them when the controller is missing.
const crioRuncWrapper = "#!/bin/sh\n" + findBundle + `if [ -n "$bundle" ] && [ -f "$bundle/config.json" ]; then
	# -z: the file is one record, so the patterns match across lines of indented JSON.
	sed -i -z -E -e 's/"oomScoreAdj":[[:space:]]*-[0-9]+/"oomScoreAdj":0/' \
		-e 's/,[[:space:]]*"hugepageLimits":[[:space:]]*\[[^]]*\]//' \
		-e 's/"hugepageLimits":[[:space:]]*\[[^]]*\][[:space:]]*,?//' "$bundle/config.json" || exit 1
fi
exec runc "$@"
`

// crioRegistries makes pulls impossible: no short name resolves, and every registry a pull
// could name is blocked before any lookup. The cluster's images are copied into the storage.
func crioRegistries() string {
	var b strings.Builder
	b.WriteString("unqualified-search-registries = []\nshort-name-mode = \"enforcing\"\n")
	for _, p := range []string{"*.io", "*.com", "*.org", "*.net", "*.dev", "*.local", "*.cloud", "*.sh", "*.app", "*.us", "*.eu", "localhost", "docker.io", "registry.k8s.io"} {
		fmt.Fprintf(&b, "\n[[registry]]\nprefix = %q\nblocked = true\n", p)
		if !strings.HasPrefix(p, "*.") {
			fmt.Fprintf(&b, "location = %q\n", p) // required unless the prefix is a wildcard
		}
	}
	return b.String()
}

// crioPolicy accepts images only from local storage and archives, and from the lab registry
// when the cluster has one (registry, its host:port): anything from another registry is
// rejected even if a pull got that far.
// CreateContainer checks the policy against the image's name as the pod spec gives it, a
// registry reference under cnibench.local, so those names are accepted: they never resolve.
func crioPolicy(registry string) string {
	lab := ""
	if registry != "" {
		lab = fmt.Sprintf(", %q: [{\"type\": \"insecureAcceptAnything\"}]", registry)
	}
	return `{"default": [{"type": "reject"}], "transports": {
  "docker": {"cnibench.local": [{"type": "insecureAcceptAnything"}]` + lab + `},
  "containers-storage": {"": [{"type": "insecureAcceptAnything"}]},
  "docker-archive": {"": [{"type": "insecureAcceptAnything"}]}}}
`
}

// config renders node n's CRI-O configuration, every path under the node's directory.
func (c crio) config(n node, wrapper string) string {
	d := crioDir(n)
	return fmt.Sprintf(`[crio]
root = %[1]q
runroot = %[2]q
storage_driver = "overlay"
log_dir = %[3]q
version_file = %[4]q
version_file_persist = %[5]q
clean_shutdown_file = %[6]q

[crio.api]
listen = %[7]q
stream_address = "127.0.0.1"
stream_port = "0"

[crio.runtime]
default_runtime = "runc"
cgroup_manager = "cgroupfs"
conmon_cgroup = "pod"
namespaces_dir = %[8]q
pinns_path = %[9]q
container_exits_dir = %[10]q
container_attach_socket_dir = %[11]q
hooks_dir = [%[12]q]
cdi_spec_dirs = [%[13]q]
irqbalance_config_file = %[14]q
irqbalance_config_restore_file = "disable"
seccomp_profile = ""
apparmor_profile = ""
selinux = false
log_to_journald = false
drop_infra_ctr = true

[crio.runtime.runtimes.runc]
runtime_path = %[15]q
runtime_type = "oci"
runtime_root = %[16]q
monitor_path = "/usr/bin/conmon"
monitor_cgroup = "pod"

[crio.image]
pause_image = %[17]q
pause_command = "/cnb-pause"
signature_policy = %[18]q
big_files_temporary_dir = %[19]q
auto_reload_registries = false

[crio.network]
network_dir = %[20]q
plugin_dirs = [%[21]q]

[crio.metrics]
enable_metrics = false

[crio.nri]
enable_nri = false
`, filepath.Join(d, "root"), filepath.Join(d, "runroot"), filepath.Join(n.dir, "pod-logs"),
		filepath.Join(d, "run", "version"), filepath.Join(d, "lib", "version"), filepath.Join(d, "lib", "clean.shutdown"),
		c.socket(n), filepath.Join(d, "ns"), c.bins.bin(binaries.PinnsBinary), filepath.Join(d, "run", "exits"),
		filepath.Join(d, "run", "attach"), filepath.Join(d, "hooks.d"), filepath.Join(d, "cdi"), filepath.Join(d, "irqbalance"),
		wrapper, n.handlerRoot(lab.RuntimeRunc), c.spec.Images.Pause, filepath.Join(d, "policy.json"), filepath.Join(d, "tmp"),
		n.cniConfDir(), c.bins.cniDir())
}

// start writes node n's CRI-O configuration, copies the cluster's images into its storage
// and starts it; it returns once the socket answers.
func (c crio) start(ctx context.Context, n node) error {
	for _, tool := range []string{"conmon", "skopeo"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("CRI-O needs %s (Debian package %s): run scripts/setup.sh", tool, tool)
		}
	}
	d := crioDir(n)
	for _, sub := range []string{"run", "lib", "tmp", "ns", "hooks.d", "cdi", "cni-cache", "etc-containers"} {
		if err := os.MkdirAll(filepath.Join(d, sub), 0o755); err != nil {
			return fmt.Errorf("node %d: %w", n.index, err)
		}
	}
	if err := os.MkdirAll(n.cniConfDir(), 0o755); err != nil {
		return fmt.Errorf("node %d: %w", n.index, err)
	}
	if err := c.writeFiles(n); err != nil {
		return err
	}
	if err := c.importImages(ctx, n); err != nil {
		return err
	}
	r, err := c.procs.start(daemon{
		name: n.name + "-crio", netns: n.netns, cgroup: n.cgroup,
		argv: []string{"unshare", "--mount", "--propagation", "slave", "sh", "-c", c.tmpMount() + crioMounts, "cnb-crio",
			filepath.Join(d, "cni-cache"), c.layout.resolvConf(c.spec.Name), filepath.Join(d, "etc-containers"), c.bins.bin(binaries.CRIOBinary),
			"--config", filepath.Join(d, "crio.conf"), "--config-dir", filepath.Join(d, "crio.conf.d"),
			"--registries-conf", filepath.Join(d, "registries.conf"), "--registries-conf-dir", filepath.Join(d, "registries.conf.d")},
		env: crioEnv(n),
	})
	if err != nil {
		return err
	}
	return c.procs.poll(ctx, "CRI-O of "+n.name, c.waits.step(6, 30*time.Second), func() (bool, error) {
		_, err := os.Stat(c.socket(n))
		return err == nil, r.exited()
	})
}

// writeFiles writes node n's CRI-O configuration, its runc wrapper, and the lab registry's CA
// where the cluster has one.
func (c crio) writeFiles(n node) error {
	d := crioDir(n)
	wrapper := filepath.Join(c.layout.Dir(c.spec.Name), "bin", "crio-runc")
	registry := ""
	if c.spec.Registry {
		registry = c.spec.Plan().RegistryAddr()
	}
	files := map[string]string{
		filepath.Join(d, "crio.conf"):       c.config(n, wrapper),
		filepath.Join(d, "registries.conf"): crioRegistries(),
		filepath.Join(d, "policy.json"):     crioPolicy(registry),
		filepath.Join(d, "storage.conf"):    fmt.Sprintf("[storage]\ndriver = \"overlay\"\ngraphroot = %q\nrunroot = %q\n", filepath.Join(d, "root"), filepath.Join(d, "runroot")),
		wrapper:                             crioRuncWrapper,
	}
	if registry != "" {
		ca, err := os.ReadFile(c.layout.CAFile(c.spec.Name))
		if err != nil {
			return fmt.Errorf("node %d: the cluster's CA: %w", n.index, err)
		}
		files[filepath.Join(d, "etc-containers", "certs.d", registry, "ca.crt")] = string(ca)
	}
	for path, content := range files {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("node %d: %w", n.index, err)
		}
		mode := os.FileMode(0o644)
		if path == wrapper {
			mode = 0o755
		}
		if err := os.WriteFile(path, []byte(content), mode); err != nil {
			return fmt.Errorf("node %d: write %s: %w", n.index, filepath.Base(path), err)
		}
	}
	return nil
}

// crioEnv points CRI-O and skopeo at the node's storage and registries configuration, and
// their large temporary files at the node's directory.
func crioEnv(n node) []string {
	d := crioDir(n)
	return []string{"CONTAINERS_STORAGE_CONF=" + filepath.Join(d, "storage.conf"),
		"CONTAINERS_REGISTRIES_CONF=" + filepath.Join(d, "registries.conf"), "TMPDIR=" + filepath.Join(d, "tmp")}
}

// importImages copies the cluster's image archives into node n's CRI-O storage with skopeo,
// before CRI-O holds the storage.
func (c crio) importImages(ctx context.Context, n node) error {
	d := crioDir(n)
	// In the order buildImages lists the archives.
	refs := []string{c.spec.Images.Pause, c.spec.Images.CoreDNS, c.spec.Images.Tools}
	ctx, cancel := context.WithTimeout(ctx, c.waits.step(3, time.Minute))
	defer cancel()
	store := fmt.Sprintf("containers-storage:[overlay@%s+%s]", filepath.Join(d, "root"), filepath.Join(d, "runroot"))
	for j, archive := range c.archives {
		cmd := exec.CommandContext(ctx, "unshare", "--mount", "--propagation", "private", "sh", "-c", importMounts, "cnb-import", d,
			"skopeo", "--policy", filepath.Join(d, "policy.json"), "copy", "-q", "docker-archive:"+archive, store+refs[j])
		cmd.Env = append(os.Environ(), crioEnv(n)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("copy %s into the CRI-O storage of %s: %w: %s", filepath.Base(archive), n.name, err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}
