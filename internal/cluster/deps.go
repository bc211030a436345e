package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sort"
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

// checkHostTools names every host program the cluster needs that is missing, with its package.
func checkHostTools() error {
	var missing []string
	for tool, pkg := range hostTools() {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, fmt.Sprintf("%s (Debian package %s)", tool, pkg))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	sort.Strings(missing)
	return fmt.Errorf("missing programs: %s; run scripts/setup.sh", strings.Join(missing, ", "))
}

// ensureDependencies builds, on first use, the binaries this cluster runs that the cache lacks:
// the Kubernetes release, and the datapath's own (a bridge cluster never waits for Cilium). The
// build prints the same progress lines as scripts/setup.sh.
func ensureDependencies(ctx context.Context, o Options, dp datapath.Datapath) error {
	comps, err := binaries.Base(o.Kubernetes)
	if err != nil {
		return err
	}
	if wb, ok := dp.(datapath.WithBinaries); ok {
		extra, err := binaries.Providing(wb.Binaries())
		if err != nil {
			return fmt.Errorf("datapath %s: %w", dp.Name(), err)
		}
		comps = append(comps, extra...)
	}
	rts, err := runtimeComponents(o.CRI, o.Runtimes)
	if err != nil {
		return fmt.Errorf("runtimes: %w", err)
	}
	comps = append(comps, rts...)
	if o.GatewayAPI || o.EnvoyGateway {
		gw, err := gatewayComponents(o.EnvoyGateway)
		if err != nil {
			return err
		}
		comps = append(comps, gw...)
	}
	reg, err := registryComponents(o.Registry)
	if err != nil {
		return err
	}
	comps = append(comps, reg...)
	mu, err := multusComponents(o.Multus)
	if err != nil {
		return err
	}
	comps = append(comps, mu...)
	if _, err := os.Stat(o.Cache.Path(binaries.PauseBinary)); err != nil {
		return fmt.Errorf("missing %s, which is built from this repository: run scripts/setup.sh", o.Cache.Path(binaries.PauseBinary))
	}
	if missing := o.Cache.Missing(comps...); len(missing) > 0 {
		fmt.Fprintf(o.Out, "building what this cluster needs and %s lacks, on first use (kubernetes %s, datapath %s, %s with %s): %s\n",
			o.Cache.BinDir(), o.Kubernetes, dp.Name(), o.CRI, strings.Join(o.Runtimes, ","), strings.Join(missing, ", "))
		if err := o.Cache.Ensure(ctx, o.Out, comps...); err != nil {
			return fmt.Errorf("build the cluster's binaries: %w", err)
		}
	}
	return nil
}

// hostRoutes lists the IPv4 and IPv6 destinations of every route in every table of the root
// namespace.
func hostRoutes() ([]*net.IPNet, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var nets []*net.IPNet
	for _, family := range []string{"-4", "-6"} {
		out, err := exec.CommandContext(ctx, "ip", family, "-o", "route", "show", "table", "all").Output()
		if err != nil {
			return nil, fmt.Errorf("list host routes (ip %s): %w", family, err)
		}
		nets = append(nets, parseRouteDests(string(out))...)
	}
	return nets, nil
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
		switch {
		case dst == "default":
			// Of either family: callers only ever skip it (isDefault).
			dst = "0.0.0.0/0"
		case !strings.Contains(dst, "/") && strings.Contains(dst, ":"):
			dst += "/128"
		case !strings.Contains(dst, "/"):
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

// clusterOfNetns recovers the cluster name from cnb-<cluster>-<ctl|ext|nodeN>; cluster names may
// themselves contain '-', so the suffix is what is stripped.
func clusterOfNetns(ns string) string {
	rest := strings.TrimPrefix(ns, "cnb-")
	i := strings.LastIndex(rest, "-")
	if i < 0 {
		return ""
	}
	suffix := rest[i+1:]
	if suffix == "ctl" || suffix == "ext" {
		return rest[:i]
	}
	digits := strings.TrimPrefix(suffix, "node")
	if digits == suffix || digits == "" || strings.Trim(digits, "0123456789") != "" {
		return ""
	}
	return rest[:i]
}
