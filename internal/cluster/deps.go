package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/cluster/binaries"
	"github.com/cnibench/cnibench/internal/cluster/datapath"
)

// hostTools are the programs from the host's packages that a cluster runs or calls.
func hostTools() map[string]string {
	return map[string]string{
		"etcd": "etcd-server", "runc": "runc", "crun": "crun", "nsenter": "util-linux", "unshare": "util-linux",
		"ip": "iproute2", "sysctl": "procps", "iptables": "iptables", "nft": "nftables", "mmdebstrap": "mmdebstrap",
	}
}

// checkDependencies fails with one message naming everything that is missing and how to get it.
func checkDependencies(cache binaries.Cache, dp datapath.Datapath) error {
	var missing []string
	for tool, pkg := range hostTools() {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, fmt.Sprintf("%s (Debian package %s)", tool, pkg))
		}
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("the local cluster needs root (namespaces, cgroups, mounts): run as root")
	}
	var problems []string
	if len(missing) > 0 {
		problems = append(problems, "missing programs: "+strings.Join(missing, ", "))
	}
	var base []binaries.Component
	for _, name := range []string{binaries.CNIPlugins, binaries.CoreDNS, binaries.Containerd, binaries.Kubernetes} {
		comp, err := binaries.Lookup(name)
		if err != nil {
			return err
		}
		base = append(base, comp)
	}
	// Only what this cluster runs: a bridge cluster does not need cilium built.
	if err := cache.Check(base...); err != nil {
		problems = append(problems, err.Error())
	}
	if _, err := os.Stat(cache.Path("cnb-pause")); err != nil {
		problems = append(problems, "missing "+cache.Path("cnb-pause"))
	}
	if wb, ok := dp.(datapath.WithBinaries); ok {
		for _, b := range wb.Binaries() {
			if _, err := os.Stat(cache.Path(b)); err != nil {
				problems = append(problems, fmt.Sprintf("datapath %s needs %s, which is not built", dp.Name(), cache.Path(b)))
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("dependencies of the local cluster are missing; run scripts/setup.sh:\n  %s", strings.Join(problems, "\n  "))
	}
	return nil
}

// hostRoutes lists the IPv4 destinations of every route in every table of the root namespace.
func hostRoutes() ([]*net.IPNet, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ip", "-4", "-o", "route", "show", "table", "all").Output()
	if err != nil {
		return nil, fmt.Errorf("list host routes: %w", err)
	}
	return parseRouteDests(string(out)), nil
}

// parseRouteDests extracts destinations from `ip -o route` lines such as
// "unreachable 10.200.0.0/16", "10.0.0.0/8 via ...", "local 127.0.0.1 dev lo table local".
func parseRouteDests(out string) []*net.IPNet {
	var nets []*net.IPNet
	for _, line := range strings.Split(out, "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		dst := fields[0]
		switch dst {
		case "unicast", "unreachable", "blackhole", "prohibit", "local", "broadcast", "multicast", "throw", "nat", "anycast":
			if len(fields) < 2 {
				continue
			}
			dst = fields[1]
		}
		if dst == "default" {
			dst = "0.0.0.0/0"
		}
		if !strings.Contains(dst, "/") {
			dst += "/32"
		}
		if _, n, err := net.ParseCIDR(dst); err == nil {
			nets = append(nets, n)
		}
	}
	return nets
}

// namespacesOf lists the network namespaces under /run/netns that belong to a cluster name.
func namespacesOf(name string) []string {
	entries, err := os.ReadDir("/run/netns")
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "cnb-"+name+"-") && clusterOfNetns(e.Name()) == name {
			out = append(out, e.Name())
		}
	}
	return out
}

// clusterOfNetns recovers the cluster name from cnb-<cluster>-<ctl|nodeN>; cluster names may
// themselves contain '-', so the suffix is what is stripped.
func clusterOfNetns(ns string) string {
	rest := strings.TrimPrefix(ns, "cnb-")
	i := strings.LastIndex(rest, "-")
	if i < 0 {
		return ""
	}
	suffix := rest[i+1:]
	if suffix == "ctl" {
		return rest[:i]
	}
	digits := strings.TrimPrefix(suffix, "node")
	if digits == suffix || digits == "" || strings.Trim(digits, "0123456789") != "" {
		return ""
	}
	return rest[:i]
}
