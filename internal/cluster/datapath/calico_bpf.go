package datapath

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"

	"github.com/cnibench/cnibench/internal/cluster/binaries"
)

// calicoCTLB is felix's connect-time load balancing in calico-ebpf: its default, TCP alone
// (UDP Services are translated per packet by the tc programs).
const calicoCTLB = "TCP"

// calicoBTF is the kernel's own BTF, without which felix would load the objects built without
// CO-RE, which the cache does not hold.
const calicoBTF = "/sys/kernel/btf/vmlinux"

// ReplacesKubeProxy implements WithoutKubeProxy: felix's eBPF dataplane serves Services.
func (d Calico) ReplacesKubeProxy() bool { return d.EBPF }

// calicoObjectsDir is the directory laid over /usr/lib in calico-node's mount namespace:
// calico/bpf below it holds the objects felix loads.
func calicoObjectsDir(c Cluster) string { return filepath.Join(calicoDir(c), "usr-lib") }

// setupCalicoBPF checks what felix's eBPF dataplane runs and needs of the kernel, and unpacks
// the objects into the cluster's directory.
func setupCalicoBPF(c Cluster) error {
	for tool, pkg := range map[string]string{"bpftool": "bpftool", "tc": "iproute2"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("calico-ebpf needs %s (Debian package %s; scripts/setup.sh installs it): %w", tool, pkg, err)
		}
	}
	if _, err := os.Stat(calicoBTF); err != nil {
		return fmt.Errorf("calico-ebpf needs the kernel's BTF (CONFIG_DEBUG_INFO_BTF): %w", err)
	}
	dir := filepath.Join(calicoObjectsDir(c), "calico", "bpf")
	if err := binaries.UnpackBPF(c.Bin(binaries.CalicoBPFArchive), dir); err != nil {
		return fmt.Errorf("calico-ebpf objects: %w", err)
	}
	return nil
}

// bpfMounts are what calico-node's mount namespace gets on node n: the directory laid over
// /usr/lib with the eBPF dataplane ("-" without it), and the node's cgroup2 subtree, which the
// cluster creates before any daemon starts and removes at delete. Only the eBPF dataplane
// needs a cgroup2 hierarchy; without one the others get "-" and run as before.
func (d Calico) bpfMounts(c Cluster, n Node) (objects, cgroup string, err error) {
	cgroup2, err := cgroup2Mount()
	if err != nil && !d.EBPF {
		return "-", "-", nil
	}
	if err != nil {
		return "", "", err
	}
	cgroup = filepath.Join(cgroup2, "cnb-"+c.Name, n.Name)
	if _, err := os.Stat(cgroup); err != nil {
		return "", "", fmt.Errorf("cgroup2 directory of %s: %w", n.Name, err)
	}
	if !d.EBPF {
		return "-", cgroup, nil
	}
	return calicoObjectsDir(c), cgroup, nil
}

// bpfEnv is felix's dataplane configuration on node n: off but for calico-ebpf, where felix
// attaches to the node's uplink and its VXLAN device, replaces kube-proxy (there is none to
// clean up after), and logs nothing from its programs (the only objects built).
func (d Calico) bpfEnv(n Node) []string {
	if !d.EBPF {
		return []string{"FELIX_BPFENABLED=false"}
	}
	return []string{
		"FELIX_BPFENABLED=true", "FELIX_BPFLOGLEVEL=off", "FELIX_BPFKUBEPROXYIPTABLESCLEANUPENABLED=false",
		"FELIX_BPFCONNECTTIMELOADBALANCING=" + calicoCTLB,
		"FELIX_BPFDATAIFACEPATTERN=^(" + regexp.QuoteMeta(n.Uplink) + `|vxlan\.calico)$`,
	}
}
