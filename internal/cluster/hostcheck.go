package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/containerd/cgroups/v3"
	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/setting"
)

// Kernel releases the local cluster needs: 5.10 for the datapaths (Cilium's floor), 5.13 for
// kube-proxy's nftables mode.
var (
	minKernel         = kernelVersion{5, 10}
	minKernelNftProxy = kernelVersion{5, 13}
)

// neededControllers are the cgroup controllers the kubelet requires in its cgroup root.
var neededControllers = []string{"cpu", "cpuset", "memory", "pids"}

// checkHost checks, before anything is built or created, that this host can run a local
// cluster: root, the kernel's release and features, the cgroup layout and its controllers, the
// inotify budget, and the host programs. Each problem is one line of the error, saying what is
// missing and what to do. It returns the host's cgroup layout for the create to use.
func checkHost(o Options) (cgroupTree, error) {
	if os.Geteuid() != 0 {
		return cgroupTree{}, errors.New("the local cluster needs root (network namespaces, cgroups, mounts): run cnibench as root")
	}
	var problems []string
	add := func(err error) {
		if err != nil {
			problems = append(problems, err.Error())
		}
	}
	add(checkKernel(o.ProxyMode))
	cg, err := detectCgroups()
	add(err)
	if err == nil {
		add(checkControllers(cg))
	}
	add(checkKernelFeatures(o.Datapath))
	add(checkHostTools())
	add(checkInotify(o.Nodes))
	if len(problems) > 0 {
		return cg, fmt.Errorf("this host cannot run a local cluster (see docs/local-cluster.md, Host requirements):\n  %s", strings.Join(problems, "\n  "))
	}
	return cg, nil
}

// kernelVersion is a kernel release's major and minor number.
type kernelVersion struct{ major, minor int }

func (v kernelVersion) less(w kernelVersion) bool {
	return v.major < w.major || (v.major == w.major && v.minor < w.minor)
}

func (v kernelVersion) String() string { return fmt.Sprintf("%d.%d", v.major, v.minor) }

// parseKernelRelease reads "6.1.0-27-amd64" or "6.18.44-fc" as 6.1 / 6.18.
func parseKernelRelease(rel string) (kernelVersion, error) {
	parts := strings.SplitN(rel, ".", 3)
	if len(parts) < 2 {
		return kernelVersion{}, fmt.Errorf("kernel release %q: expected MAJOR.MINOR[.PATCH][-suffix]", rel)
	}
	minor := parts[1]
	if i := strings.IndexFunc(minor, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		minor = minor[:i]
	}
	maj, err1 := strconv.Atoi(parts[0])
	mnr, err2 := strconv.Atoi(minor)
	if err1 != nil || err2 != nil {
		return kernelVersion{}, fmt.Errorf("kernel release %q: expected MAJOR.MINOR[.PATCH][-suffix]", rel)
	}
	return kernelVersion{maj, mnr}, nil
}

func kernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}

func checkKernel(proxyMode string) error {
	rel := kernelRelease()
	v, err := parseKernelRelease(rel)
	if err != nil {
		return err
	}
	if v.less(minKernel) {
		return fmt.Errorf("kernel %s: the local cluster needs Linux %s or newer", rel, minKernel)
	}
	if proxyMode == "nftables" && v.less(minKernelNftProxy) {
		return &setting.Error{Name: "proxyMode", Value: `"nftables"`, Want: fmt.Sprintf("kernel %s: kube-proxy's nftables mode needs Linux %s or newer; expected iptables", rel, minKernelNftProxy)}
	}
	return nil
}

// checkControllers checks that the controllers the kubelet needs are available: on a unified
// host in the root's cgroup.controllers, otherwise as mounted v1 hierarchies.
func checkControllers(t cgroupTree) error {
	have := map[string]bool{}
	if t.mode == cgroups.Unified {
		data, err := os.ReadFile(filepath.Join(t.unified, "cgroup.controllers"))
		if err != nil {
			return fmt.Errorf("cgroups: read the controllers of %s: %w", t.unified, err)
		}
		for _, c := range strings.Fields(string(data)) {
			have[c] = true
		}
	} else {
		for _, d := range t.dirs {
			for _, c := range strings.Split(filepath.Base(d), ",") {
				have[c] = true
			}
		}
	}
	var missing []string
	for _, c := range neededControllers {
		if !have[c] {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("cgroups (%s): controllers %s are not available; the kubelet needs %s",
			t, strings.Join(missing, ", "), strings.Join(neededControllers, ", "))
	}
	return nil
}

// featureProbe tries each kernel feature a cluster uses inside a new network namespace that
// disappears with the probe, so the check leaves nothing on the host and touches none of its
// interfaces. A failing step prints its name.
const featureProbe = `
ip link add cnbp0 type veth peer name cnbp1 || echo "veth (CONFIG_VETH)"
ip link add cnbpbr type bridge || echo "bridge (CONFIG_BRIDGE)"
if [ "$1" = vxlan ]; then ip link add cnbpvx type vxlan id 42 dstport 4789 local 127.0.0.1 || echo "vxlan (CONFIG_VXLAN)"; fi
if command -v nft >/dev/null; then nft add table inet cnbprobe || echo "nf_tables (CONFIG_NF_TABLES)"; fi
`

// checkKernelFeatures probes network namespaces, veth, bridge, VXLAN (for datapaths that
// encapsulate), nf_tables and overlayfs (the container images' snapshotter).
func checkKernelFeatures(dp string) error {
	var missing []string
	if _, err := os.Stat("/proc/self/ns/net"); err != nil {
		return errors.New("kernel: no network namespaces (CONFIG_NET_NS); the cluster's nodes are network namespaces")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	vx := ""
	if strings.Contains(dp, "vxlan") || strings.HasPrefix(dp, "cilium") {
		vx = "vxlan"
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "unshare", "--net", "sh", "-c", featureProbe, "probe", vx)
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kernel: cannot create a network namespace to probe its features (unshare --net): %w", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if line != "" {
			missing = append(missing, line)
		}
	}
	if !hasOverlayFS() {
		missing = append(missing, "overlayfs (CONFIG_OVERLAY_FS)")
	}
	if len(missing) > 0 {
		return fmt.Errorf("kernel %s lacks %s (built in or as modules)", kernelRelease(), strings.Join(missing, ", "))
	}
	return nil
}

// hasOverlayFS reports whether overlayfs is registered or can be loaded as a module.
func hasOverlayFS() bool {
	if data, err := os.ReadFile("/proc/filesystems"); err == nil && bytes.Contains(data, []byte("\toverlay\n")) {
		return true
	}
	return exec.Command("modprobe", "overlay").Run() == nil
}
