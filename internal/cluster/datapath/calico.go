package datapath

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/cluster/binaries"
	"github.com/cnibench/cnibench/internal/lab"
)

// Calico runs Calico as its manifests deploy it with the Kubernetes datastore and the iptables
// dataplane: per node, calico-node's start-up (it registers the node with Calico), then felix,
// which programs routes, the VXLAN device and policy chains in the node's namespace, and the
// calico CNI plugin, which plumbs each pod with a cali veth.
//
// Three deployments:
//   - calico-vxlan: Calico carries pods between nodes in VXLAN (encapsulation Always, no BGP)
//     and allocates addresses with calico-ipam from one IP pool per node, the node's planned
//     pod subnet, so pod addresses follow the cluster's plan like every other datapath's;
//   - calico-ebpf: the same network with felix's eBPF dataplane, which replaces kube-proxy
//     (calico_bpf.go);
//   - canal: flanneld (vxlan) carries pods between nodes, calico-node runs without networking,
//     and the calico plugin takes addresses from the node's pod CIDR with host-local: Calico
//     only enforces policy. RKE2 deploys this by default.
//
// calico-node writes to the fixed /var/lib/calico and /var/run/calico. Each runs in a mount
// namespace of its own where those are the node's directories under the cluster state, bpffs
// is a private instance and /proc/sys is read-only except for the namespaced /proc/sys/net.
type Calico struct {
	// Canal selects flannel for the network and Calico for policy only.
	Canal bool
	// EBPF selects felix's eBPF dataplane, which also serves Services, for calico-vxlan's
	// network.
	EBPF bool
}

// Name implements Datapath.
func (d Calico) Name() string {
	switch {
	case d.Canal:
		return "canal"
	case d.EBPF:
		return "calico-ebpf"
	}
	return "calico-vxlan"
}

// AllocateNodeCIDRs implements Datapath: canal's flanneld takes each node's subnet from the
// controller-manager's allocation; Calico's IPAM uses the plan's subnets as IP pools.
func (d Calico) AllocateNodeCIDRs() bool { return d.Canal }

// Binaries implements WithBinaries.
func (d Calico) Binaries() []string {
	b := []string{binaries.CalicoNodeBinary, binaries.CalicoCNIBinary, binaries.CalicoIPAMBinary, binaries.CalicoCRDs}
	if d.EBPF {
		b = append(b, binaries.CalicoBPFArchive)
	}
	if d.Canal {
		b = append(b, binaries.FlanneldBinary)
	}
	return b
}

// Fingerprint implements WithFingerprint: what a comparison between Calico deployments (or
// with another CNI) turns on.
func (d Calico) Fingerprint() map[string]string {
	fp := map[string]string{
		"cni": "calico", "cni_version": binaries.CalicoVersion, "cni_mode": "vxlan",
		"calico_dataplane": "iptables", "calico_encapsulation": "vxlan", "calico_ipam": "calico-ipam",
		"calico_iptables_backend": "nft",
	}
	if d.EBPF {
		fp["calico_dataplane"], fp["calico_bpf_connect_time_lb"] = "bpf", calicoCTLB
		fp["calico_kube_proxy_replacement"] = "true"
	}
	if d.Canal {
		fp["cni"], fp["cni_mode"] = "canal", "flannel vxlan, calico policy"
		fp["flannel_version"] = binaries.FlannelVersion
		fp["calico_encapsulation"], fp["calico_ipam"] = "none (flannel vxlan)", "host-local"
	}
	return fp
}

// calicoMTU is the pods' MTU: the underlay's less VXLAN's overhead, for both deployments.
// Calico's VXLAN over IPv6 costs 20 bytes more: where calico-vxlan carries IPv6, its pods take
// the smaller of the two, as felix's own MTU detection would.
func (d Calico) calicoMTU(c Cluster) int {
	if !d.Canal && c.ClusterCIDR6 != nil {
		return c.MTU - vxlan6Overhead
	}
	return c.MTU - vxlanOverhead
}

// vxlan6Overhead is VXLAN's overhead over an IPv6 underlay: its IPv4 overhead and 20 bytes
// more of IP header.
const vxlan6Overhead = vxlanOverhead + 20

// calicoDir holds the cluster's Calico files; calicoNodeDir a node's.
func calicoDir(c Cluster) string { return filepath.Join(c.StateDir, "calico") }

func calicoNodeDir(c Cluster, n Node) string { return filepath.Join(calicoDir(c), n.Name) }

// Setup checks the tools felix runs, installs Calico's CRDs (and for calico-vxlan the nodes'
// IP pools), and writes each node's CNI configuration; canal also prepares flanneld.
func (d Calico) Setup(ctx context.Context, c Cluster) error {
	for _, tool := range []string{"iptables-nft", "ipset"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s needs %s (Debian packages iptables and ipset; scripts/setup.sh installs them): %w", d.Name(), tool, err)
		}
	}
	if err := checkLibraries(d.Name(), c.Bin(binaries.CalicoNodeBinary), libraryDirs()); err != nil {
		return err
	}
	if d.EBPF {
		if err := setupCalicoBPF(c); err != nil {
			return err
		}
	}
	if d.Canal {
		if err := canalFlannel().setupFlanneld(c); err != nil {
			return err
		}
	}
	for _, n := range c.Nodes {
		for _, sub := range []string{"lib", "run"} {
			if err := os.MkdirAll(filepath.Join(calicoNodeDir(c, n), sub), 0o755); err != nil {
				return fmt.Errorf("calico directories of %s: %w", n.Name, err)
			}
		}
		if err := writeConflist(n, "10-cnb-calico.conflist", d.conflist(c, n)); err != nil {
			return err
		}
	}
	k := Kubectl{Bin: c.Bin("kubectl"), Kubeconfig: c.Kubeconfig, Cache: filepath.Join(calicoDir(c), "kubectl-cache")}
	crds := c.Bin(binaries.CalicoCRDs)
	if err := k.Run(ctx, nil, "apply", "--server-side", "--force-conflicts", "-f", crds); err != nil {
		return fmt.Errorf("install calico CRDs: %w", err)
	}
	if err := k.Run(ctx, nil, "wait", "--for=condition=Established", "--timeout=60s", "-f", crds); err != nil {
		return fmt.Errorf("wait for calico CRDs: %w", err)
	}
	if d.Canal {
		return nil
	}
	if err := k.Run(ctx, strings.NewReader(calicoIPPools(c)), "apply", "--server-side", "-f", "-"); err != nil {
		return fmt.Errorf("create calico IP pools: %w", err)
	}
	return nil
}

// canalFlannel is the flannel half of canal.
func canalFlannel() Flannel { return Flannel{Backend: FlannelVXLAN} }

// conflist is node n's CNI configuration, upstream's with every path the node's own: the
// calico plugin, then portmap for hostPort.
func (d Calico) conflist(c Cluster, n Node) map[string]any {
	// Each family the cluster has: calico-ipam assigns from that family's pools.
	v4, v6 := c.Family != lab.IPv6, c.ClusterCIDR6 != nil
	ipam := map[string]any{"type": binaries.CalicoIPAMBinary, "assign_ipv4": fmt.Sprint(v4), "assign_ipv6": fmt.Sprint(v6)}
	if d.Canal {
		// The plugin puts the Node's pod CIDRs in place of usePodCidr and usePodCidrIPv6;
		// host-local's allocations stay in the node's directory.
		var ranges [][]map[string]string
		if v4 {
			ranges = append(ranges, []map[string]string{{"subnet": "usePodCidr"}})
		}
		if v6 {
			ranges = append(ranges, []map[string]string{{"subnet": "usePodCidrIPv6"}})
		}
		ipam = map[string]any{"type": "host-local", "ranges": ranges, "dataDir": filepath.Join(n.DataDir, "ipam")}
	}
	return map[string]any{
		"cniVersion": "0.3.1",
		// Per node, like the other datapaths': host-local keys its state by network name.
		"name": "cnb-calico-" + n.Name,
		"plugins": []any{
			map[string]any{
				"type":           binaries.CalicoCNIBinary,
				"log_level":      "info",
				"log_file_path":  filepath.Join(calicoNodeDir(c, n), "cni.log"),
				"datastore_type": "kubernetes",
				"nodename":       n.Name,
				// The plugin refuses to run until calico-node's start-up has written this file
				// (its sign that calico-node runs); the fixed /var/lib/calico/nodename exists only
				// in calico-node's mount namespace, so it is named where it really is.
				"nodename_file": filepath.Join(calicoNodeDir(c, n), "lib", "nodename"),
				"mtu":           d.calicoMTU(c),
				"ipam":          ipam,
				"policy":        map[string]any{"type": "k8s"},
				"kubernetes":    map[string]any{"kubeconfig": c.Kubeconfig},
			},
			map[string]any{"type": "portmap", "snat": true, "capabilities": map[string]bool{"portMappings": true}},
		},
	}
}

// calicoIPPools are calico-vxlan's pools: per node and family, its planned pod subnet, selected
// by node name so that calico-ipam gives each node's pods addresses from its own subnets.
// IPv6 blocks are Calico's default /122.
func calicoIPPools(c Cluster) string {
	var b strings.Builder
	pool := func(name string, cidr *net.IPNet, block int, node string) {
		fmt.Fprintf(&b, `---
apiVersion: crd.projectcalico.org/v1
kind: IPPool
metadata:
  name: %s
spec:
  cidr: %s
  blockSize: %d
  vxlanMode: Always
  ipipMode: Never
  natOutgoing: true
  nodeSelector: kubernetes.io/hostname == "%s"
`, name, cidr, block, node)
	}
	for _, n := range c.Nodes {
		if c.Family != lab.IPv6 {
			pool("cnb-"+n.Name, n.PodCIDR, 26, n.Name)
		}
		if n.PodCIDR6 != nil {
			pool("cnb-"+n.Name+"-v6", n.PodCIDR6, 122, n.Name)
		}
	}
	return b.String()
}

// Daemons implements WithDaemons: canal's flanneld per node first, then calico-node per node,
// ready when felix says it is.
func (d Calico) Daemons(c Cluster) ([]Daemon, error) {
	if c.Bin == nil {
		return nil, fmt.Errorf("%s: the cluster gives no binary paths", d.Name())
	}
	var out []Daemon
	if d.Canal {
		fl, err := canalFlannel().Daemons(c)
		if err != nil {
			return nil, err
		}
		out = append(out, fl...)
	}
	node := c.Bin(binaries.CalicoNodeBinary)
	for i, n := range c.Nodes {
		objects, cgroup, err := d.bpfMounts(c, n)
		if err != nil {
			return nil, err
		}
		argv := []string{"unshare", "--mount", "--propagation", "slave", "sh", "-c", calicoNodeMounts, "cnb-calico-node",
			c.StateDir, calicoNodeDir(c, n), node, fmt.Sprint(!d.Canal),
			c.Bin("kubectl"), filepath.Join(calicoDir(c), "kubectl-cache"), n.Name, objects, cgroup}
		netns := n.Netns
		out = append(out, Daemon{
			Name: n.Name + "-calico-node", Node: i + 1,
			Argv: argv,
			Env:  d.env(c, n),
			Ready: func() bool {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				return exec.CommandContext(ctx, "ip", "netns", "exec", netns, node, "-felix-ready").Run() == nil
			},
		})
	}
	return out, nil
}

// calicoNodeMounts prepares calico-node's private mount namespace (created by unshare with slave
// propagation, so nothing mounted here reaches the host), then runs its start-up, for VXLAN the
// allocation of the node's tunnel address, and becomes felix. /var/lib is a tmpfs, so the fixed
// /var/lib/calico is the node's directory without creating anything in the host's /var/lib;
// the cluster's state directory is bound back into it (the kubeconfig is there). /run is a
// tmpfs for the same reason (/var/run/calico); felix's BPF clean-up sees a private bpffs.
// The node's cgroup2 subtree is bound at /run/calico/cgroup, where felix attaches connect-time
// load balancing (the node's processes are translated, no others) and, without the eBPF
// dataplane, looks for one to remove at start-up (instead of mounting the host's cgroup2
// root there). With the eBPF dataplane, /usr/lib is a read-only overlay whose first layer holds
// calico/bpf: felix reads its objects from the fixed /usr/lib/calico/bpf, and nothing is
// created in the host's /usr/lib.
// The start-up fails on a Node object that does not exist yet, so it waits for the kubelet to
// register it (kubectl reads KUBECONFIG from the environment). It also fails when another
// writer updates the Node between its read and its write: the kubelet's status, and the pod
// CIDR written the moment the Node appears (by create for calico-vxlan, by the
// controller-manager for canal). Where a DaemonSet would restart the container, the script
// runs it again, a few times.
// Arguments: the cluster's state directory, the node's calico directory, calico-node, whether
// to allocate a VXLAN tunnel address, kubectl, its cache directory, the node's name, the
// directory to lay over /usr/lib and the node's cgroup2 directory ("-" for none).
const calicoNodeMounts = `set -e
state=$1 dir=$2 node=$3 vxlan=$4 kubectl=$5 cache=$6 name=$7 objects=$8 cgroup=$9
until "$kubectl" --cache-dir="$cache" get node "$name" >/dev/null 2>&1; do sleep 0.5; done
mount -t tmpfs -o mode=0755 cnb-calico-run /run
mkdir -p /run/cnb-state /run/calico
mount --bind "$state" /run/cnb-state
mount --bind "$dir/run" /run/calico
mount -t tmpfs -o mode=0755 cnb-calico-lib /var/lib
mkdir -p /var/lib/calico "$state"
mount --bind /run/cnb-state "$state"
mount --bind "$dir/lib" /var/lib/calico
mount -t bpf cnb-calico-bpffs /sys/fs/bpf
mount --bind /proc/sys /proc/sys
mount -o remount,bind,ro /proc/sys
mount --bind /proc/sys/net /proc/sys/net
mount -o remount,bind,rw /proc/sys/net
if [ "${objects:--}" != - ]; then mount -t overlay -o "lowerdir=$objects:/usr/lib" cnb-calico-objects /usr/lib; fi
if [ "${cgroup:--}" != - ]; then mkdir -p /run/calico/cgroup; mount --bind "$cgroup" /run/calico/cgroup; fi
tries=0
until "$node" -startup; do
  tries=$((tries+1)); [ "$tries" -lt 5 ] || exit 1
  sleep 1
done
if [ "$vxlan" = true ]; then "$node" -allocate-tunnel-addrs -allocate-tunnel-addrs-run-once; fi
exec "$node" -felix`

// env is calico-node's configuration for node n, as upstream's manifests set it, with what
// this lab needs on top: no usage reports (felix would call out of the lab), no pools of
// Calico's choosing, no log files, no XDP, the nft iptables backend Debian's iptables is, and
// the eBPF dataplane for calico-ebpf only (bpfEnv).
func (d Calico) env(c Cluster, n Node) []string {
	env := []string{
		"DATASTORE_TYPE=kubernetes", "FELIX_DATASTORETYPE=kubernetes", "KUBECONFIG=" + c.Kubeconfig,
		"WAIT_FOR_DATASTORE=true", "NODENAME=" + n.Name, "FELIX_FELIXHOSTNAME=" + n.Name,
		"NO_DEFAULT_POOLS=true", "CALICO_MANAGE_CNI=false",
		"CALICO_DISABLE_FILE_LOGGING=true", "FELIX_LOGFILEPATH=none", "FELIX_LOGSEVERITYSCREEN=info",
		"FELIX_DEFAULTENDPOINTTOHOSTACTION=ACCEPT", "FELIX_HEALTHENABLED=true",
		"FELIX_USAGEREPORTINGENABLED=false", "FELIX_IPTABLESBACKEND=nft", "FELIX_XDPENABLED=false",
		"FELIX_PROMETHEUSMETRICSENABLED=false",
		// The node's uplink is eth0, which felix's default pattern matches; said here because
		// the VXLAN MTU derives from it.
		"FELIX_MTUIFACEPATTERN=^" + n.Uplink + "$",
	}
	env = append(env, calicoFamilyEnv(c, n)...)
	env = append(env, d.bpfEnv(n)...)
	if d.Canal {
		// As manifests/canal.yaml sets them, the 60 s full re-apply of felix's rules included.
		return append(env, "CALICO_NETWORKING_BACKEND=none", "CLUSTER_TYPE=k8s,canal", "USE_POD_CIDR=true",
			"FELIX_IPTABLESREFRESHINTERVAL=60")
	}
	return append(env, "CALICO_NETWORKING_BACKEND=vxlan", "CLUSTER_TYPE=k8s", fmt.Sprintf("FELIX_VXLANMTU=%d", c.MTU-vxlanOverhead), fmt.Sprintf("FELIX_VXLANMTUV6=%d", c.MTU-vxlan6Overhead))
}

// calicoFamilyEnv gives calico-node the node's address of each family the cluster has ("none"
// for a family it lacks: no detection), and felix IPv6 where the cluster has it. The node's
// IPv6 address is also where Calico's IPv6 VXLAN tunnels end.
func calicoFamilyEnv(c Cluster, n Node) []string {
	ip, ip6, v6 := "none", "none", c.ClusterCIDR6 != nil
	if c.Family != lab.IPv6 {
		ip = n.IP.String() + "/24"
	}
	if v6 {
		ip6 = n.IP6.String() + "/64"
	}
	return []string{"IP=" + ip, "IP6=" + ip6, fmt.Sprintf("FELIX_IPV6SUPPORT=%t", v6)}
}

// Kubectl runs the cluster's kubectl against it, with its cache in the cluster's directory:
// how manifests that ship as YAML (CRDs, policies) are applied.
type Kubectl struct {
	Bin, Kubeconfig, Cache string
}

// Run runs kubectl with args, stdin (may be nil) as its input, and returns its output in the
// error when it fails.
func (k Kubectl) Run(ctx context.Context, stdin io.Reader, args ...string) error {
	full := append([]string{"--kubeconfig=" + k.Kubeconfig, "--cache-dir=" + k.Cache}, args...)
	cmd := exec.CommandContext(ctx, k.Bin, full...)
	if stdin != nil {
		cmd.Stdin = stdin
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return nil
}
