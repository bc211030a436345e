package datapath

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/cluster/binaries"
	"github.com/cnibench/cnibench/internal/lab"
)

// Cilium is the Cilium datapath (eBPF): one cilium-agent per node and one cilium-operator
// for the cluster, with kube-proxy left in charge of Services (kube-proxy replacement and the
// socket load balancer are off: the latter would attach to cgroups shared with the host).
//
// Cilium assumes it owns a machine: fixed paths under /var/run/cilium, bpffs at /sys/fs/bpf,
// the root cgroup2, machine-wide kernel sysctls. Here every agent runs in the node's network
// namespace and in a mount namespace of its own, where /run is a private tmpfs whose cilium
// directory is the node's directory under the cluster state, bpffs is a private instance, the
// cgroup root is the node's own cgroup2 subtree, and /proc/sys is read-only except for the
// namespaced /proc/sys/net. Nothing it does outlives the agent or leaves the cluster.
type Cilium struct {
	// Native routes pod traffic over the shared underlay L2 without encapsulation
	// (auto-direct-node-routes) instead of through VXLAN tunnels.
	Native bool
	// KPR deploys Cilium as it is usually run: native routing with kube-proxy replacement (the
	// cluster runs no kube-proxy), the socket load balancer, BPF masquerading and BPF host
	// routing. The socket load balancer attaches to the agent's --cgroup-root, the node's own
	// cgroup2 subtree, so it translates the node's connections only.
	KPR bool
}

// Name implements Datapath.
func (d Cilium) Name() string {
	switch {
	case d.KPR:
		return "cilium-kpr"
	case d.Native:
		return "cilium-native"
	}
	return "cilium-vxlan"
}

// ReplacesKubeProxy implements WithoutKubeProxy.
func (d Cilium) ReplacesKubeProxy() bool { return d.KPR }

// native reports whether pod traffic crosses nodes unencapsulated.
func (d Cilium) native() bool { return d.Native || d.KPR }

// AllocateNodeCIDRs implements Datapath. The nodes' pod CIDRs follow the cluster's plan (the
// control plane routes each node's plan subnet to it), and the agents' kubernetes IPAM reads
// them from the Node objects: each agent's Ready writes its node's before the agent needs it.
func (Cilium) AllocateNodeCIDRs() bool { return false }

// Binaries implements WithBinaries.
func (Cilium) Binaries() []string {
	return []string{ciliumAgent, ciliumOperator, ciliumCNI, ciliumDbg, binaries.CiliumBPFArchive}
}

// Fingerprint implements WithFingerprint: the CNI, its version and mode for benchmark results.
// The service and masquerading facts are what a comparison between Cilium deployments turns
// on, so each is a key of its own.
func (d Cilium) Fingerprint() map[string]string {
	fp := map[string]string{
		"cni": "cilium", "cni_version": strings.TrimPrefix(binaries.CiliumVersion, "v"), "cni_mode": "tunnel vxlan",
		"cilium_kube_proxy_replacement": "false", "cilium_socket_lb": "false", "cilium_masquerade": "iptables",
		"cilium_host_routing": "legacy", "cilium_tunnel_protocol": "vxlan",
	}
	if d.native() {
		fp["cni_mode"], fp["cilium_tunnel_protocol"] = "native", "disabled"
	}
	if d.KPR {
		fp["cni_mode"] = "native, kube-proxy replacement"
		fp["cilium_kube_proxy_replacement"], fp["cilium_socket_lb"] = "true", "true"
		fp["cilium_masquerade"], fp["cilium_host_routing"] = "bpf", "bpf"
		fp["egress_gateway_impl"] = "CiliumEgressGatewayPolicy"
		// The egress gateway reaches its gateway node through the tunnel, whatever the mode.
		fp["cilium_tunnel_protocol"] = "vxlan (egress gateway traffic only)"
	}
	return fp
}

// The compiler the agents build their programs with. Cilium asks for clang 18 or newer; the
// IPv6 programs of 1.19 that Debian's default clang 14 compiles fail the verifier ("pointer
// arithmetic on map_value_or_null prohibited" in tail_ipv6_policy), so the agents find
// Debian's versioned clang first in their PATH under the names they call.
const (
	ciliumClang = "clang-19"
	ciliumLLC   = "llc-19"
)

// ciliumToolchainDir holds the agents' clang and llc: links to ciliumClang and ciliumLLC.
func ciliumToolchainDir(c Cluster) string { return filepath.Join(ciliumDir(c), "toolchain") }

// ciliumToolchain links the versioned compiler under the names the agents call.
func ciliumToolchain(c Cluster) error {
	dir := ciliumToolchainDir(c)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cilium toolchain: %w", err)
	}
	for name, tool := range map[string]string{"clang": ciliumClang, "llc": ciliumLLC} {
		path, err := exec.LookPath(tool)
		if err != nil {
			return fmt.Errorf("cilium toolchain: %w", err)
		}
		link := filepath.Join(dir, name)
		if err := os.Remove(link); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("cilium toolchain: %w", err)
		}
		if err := os.Symlink(path, link); err != nil {
			return fmt.Errorf("cilium toolchain: %w", err)
		}
	}
	return nil
}

// Names of the cached binaries.
const (
	ciliumAgent    = "cilium-agent"
	ciliumOperator = "cilium-operator-generic"
	ciliumCNI      = "cilium-cni"
	ciliumDbg      = "cilium-dbg"
)

// ciliumPaths are a node's Cilium files; all of them live below the cluster's state directory.
type ciliumPaths struct {
	dir    string // the node's Cilium directory
	run    string // mounted on the agent's /run/cilium, linked from the runtime's
	state  string // --state-dir: compiled programs, endpoint state
	bpffs  string // mount point of the agent's private bpffs
	cgroup string // mount point of the node's cgroup2 subtree in the agent's namespace
	socket string // the agent's API socket
	cniLog string // the CNI plugin's log
}

func ciliumDir(c Cluster) string { return filepath.Join(c.StateDir, "cilium") }

// ciliumLibDir is the agents' --lib-dir: the datapath sources are its bpf/ subdirectory.
func ciliumLibDir(c Cluster) string { return filepath.Join(ciliumDir(c), "lib") }

func ciliumNodePaths(c Cluster, n Node) ciliumPaths {
	dir := filepath.Join(ciliumDir(c), n.Name)
	run := filepath.Join(dir, "run")
	return ciliumPaths{
		dir: dir, run: run, state: filepath.Join(dir, "state"), bpffs: filepath.Join(dir, "bpffs"),
		cgroup: filepath.Join(dir, "cgroup"), socket: filepath.Join(run, "cilium.sock"),
		cniLog: filepath.Join(dir, "cni.log"),
	}
}

// Setup checks the compiler, unpacks the datapath sources and writes each node's CNI config.
func (d Cilium) Setup(_ context.Context, c Cluster) error {
	// The agent compiles its programs at run time; without clang it would start and then
	// fail every endpoint, so say it here. Native routing also masquerades with an ipset of
	// the node addresses, which the agent creates with the ipset tool.
	tools := []string{ciliumClang, ciliumLLC}
	if d.native() {
		tools = append(tools, "ipset")
	}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s needs %s (Debian packages clang-19, llvm-19 and ipset; scripts/setup.sh installs them): %w", d.Name(), tool, err)
		}
	}
	if err := ciliumToolchain(c); err != nil {
		return err
	}
	if err := binaries.UnpackBPF(c.Bin(binaries.CiliumBPFArchive), filepath.Join(ciliumLibDir(c), "bpf")); err != nil {
		return err
	}
	for _, n := range c.Nodes {
		p := ciliumNodePaths(c, n)
		for _, dir := range []string{p.run, p.state, p.bpffs, p.cgroup} {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("cilium directories of %s: %w", n.Name, err)
			}
		}
		conf := map[string]any{
			"cniVersion": "0.3.1",
			"name":       "cilium",
			"plugins": []any{map[string]any{
				"type":         ciliumCNI,
				"enable-debug": false,
				"log-file":     p.cniLog,
			}},
		}
		if err := writeConflist(n, "05-cilium.conflist", conf); err != nil {
			return err
		}
	}
	return nil
}

// Daemons implements WithDaemons: the operator in the control-plane namespace, then an agent
// per node.
func (d Cilium) Daemons(c Cluster) ([]Daemon, error) {
	cgroup2, err := cgroup2Mount()
	if err != nil {
		return nil, err
	}
	cs, err := kubeClient(c.Kubeconfig)
	if err != nil {
		return nil, err
	}
	out := []Daemon{{
		Name: "cilium-operator", Node: 0,
		Argv: append([]string{"unshare", "--mount", "--propagation", "slave", "sh", "-c", ciliumOperatorMounts, "cnb-cilium-operator",
			filepath.Join(ciliumDir(c), "operator")}, d.operatorArgv(c)...),
	}}
	for i, n := range c.Nodes {
		p := ciliumNodePaths(c, n)
		// The node's cgroups are created by the cluster (in every hierarchy, cgroup2 included)
		// before any daemon starts, and removed by its delete.
		nodeCgroup := filepath.Join(cgroup2, "cnb-"+c.Name, n.Name)
		if _, err := os.Stat(nodeCgroup); err != nil {
			return nil, fmt.Errorf("cgroup2 directory of %s: %w", n.Name, err)
		}
		// The CNI plugin runs in the node runtime's mount namespace and finds its agent at the
		// fixed /var/run/cilium/cilium.sock.
		if err := linkRuntimeRunDir(c, n, p.run); err != nil {
			return nil, err
		}
		client := ciliumClient{socket: p.socket}
		out = append(out, Daemon{
			Name: n.Name + "-cilium-agent", Node: i + 1,
			Argv: append([]string{"unshare", "--mount", "--propagation", "slave", "sh", "-c", ciliumAgentMounts, "cnb-cilium-agent",
				p.run, p.bpffs, nodeCgroup, p.cgroup}, d.agentArgv(c, n, p)...),
			// The agent finds its Node object by this name, or else by the host's name; its
			// compiler first in its PATH.
			Env: []string{"K8S_NODE_NAME=" + n.Name, "PATH=" + ciliumToolchainDir(c) + ":" + os.Getenv("PATH")},
			Ready: func() bool {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				// Without a pod CIDR the agent's kubernetes IPAM waits forever, and the
				// provider writes the plan's only once every daemon is ready. Every node's,
				// so that the agents polled later are not held up meanwhile.
				if err := ensurePodCIDRs(ctx, cs, c); err != nil {
					return false
				}
				return client.healthy(ctx) == nil
			},
		})
	}
	return out, nil
}

// ciliumAgentMounts prepares the agent's private mount namespace (created by unshare with
// slave propagation, so nothing mounted here reaches the host) and becomes the agent.
// Arguments: the node's run directory, bpffs mount point, cgroup2 directory, cgroup mount
// point, then the agent's command.
//   - /run: a tmpfs, so the hard-coded /var/run/cilium (pid file, deletion queue, health and
//     monitor sockets) is the node's directory and nothing is created in the host's /run;
//   - bpffs: a private instance, so pinned maps die with the agent instead of accumulating in
//     the host's /sys/fs/bpf;
//   - cgroup: the node's cgroup2 subtree bind-mounted where --cgroup-root points (the agent
//     would otherwise mount the cgroup2 root, shared with every process on the machine);
//   - /proc/sys read-only except /proc/sys/net (per network namespace): the agent otherwise
//     sets machine-wide kernel sysctls (unprivileged BPF, timer migration, ...). A bind mount
//     inherits the read-only flag of its source, hence the explicit rw remount.
const ciliumAgentMounts = `set -e
run=$1 bpffs=$2 cgsrc=$3 cgdst=$4
shift 4
mount -t tmpfs -o mode=0755 cnb-cilium-run /run
mkdir -p /run/cilium
mount --bind "$run" /run/cilium
mount -t bpf cnb-cilium-bpffs "$bpffs"
mount --bind "$cgsrc" "$cgdst"
mount --bind /proc/sys /proc/sys
mount -o remount,bind,ro /proc/sys
mount --bind /proc/sys/net /proc/sys/net
mount -o remount,bind,rw /proc/sys/net
exec "$@"`

// ciliumOperatorMounts gives the operator the same private /run and read-only /proc/sys as
// the agents, with its own directory as /run/cilium.
const ciliumOperatorMounts = `set -e
dir=$1
shift
mkdir -p "$dir"
mount -t tmpfs -o mode=0755 cnb-cilium-run /run
mkdir -p /run/cilium
mount --bind "$dir" /run/cilium
mount --bind /proc/sys /proc/sys
mount -o remount,bind,ro /proc/sys
exec "$@"`

// agentArgv is one node's cilium-agent command line.
func (d Cilium) agentArgv(c Cluster, n Node, p ciliumPaths) []string {
	argv := []string{
		c.Bin(ciliumAgent),
		"--k8s-kubeconfig-path=" + c.Kubeconfig,
		"--cluster-name=" + c.Name,
		"--cluster-id=0",
		"--identity-allocation-mode=crd",
		"--ipam=kubernetes",
		"--devices=" + n.Uplink,
		// What it would detect on the uplink, said so that no guess is involved; it takes its
		// tunnel's overhead off itself.
		fmt.Sprintf("--mtu=%d", c.MTU),
		// Nothing here may leave the cluster's own files: paths are the node's.
		"--state-dir=" + p.state,
		"--socket-path=" + p.socket,
		"--lib-dir=" + ciliumLibDir(c),
		"--bpf-root=" + p.bpffs,
		"--cgroup-root=" + p.cgroup,
		"--cni-log-file=" + p.cniLog,
		// Features that would start helpers, listeners or proxies the cluster has no use for:
		// the health endpoint needs an extra binary, the L7 proxy needs Envoy.
		"--enable-health-checking=false",
		"--enable-endpoint-health-checking=false",
		"--enable-hubble=false",
		"--enable-l7-proxy=false",
		"--enable-gops=false",
		"--prometheus-serve-addr=",
		"--enable-policy=default",
		"--enable-k8s-networkpolicy=true",
	}
	argv = append(argv, familyArgs(c)...)
	argv = append(argv, d.serviceArgs()...)
	if d.native() {
		if c.ClusterCIDR6 != nil {
			argv = append(argv, "--ipv6-native-routing-cidr="+c.ClusterCIDR6.String())
		}
		return append(argv,
			"--routing-mode=native",
			"--ipv4-native-routing-cidr="+c.ClusterCIDR.String(),
			// All nodes share the underlay L2: each agent routes the other nodes' pod CIDRs
			// directly via their underlay address.
			"--auto-direct-node-routes=true",
			"--direct-routing-device="+n.Uplink,
		)
	}
	return append(argv, "--routing-mode=tunnel", "--tunnel-protocol=vxlan")
}

// familyArgs enable the cluster's IP families in the agent: each family's pods take their
// addresses from the node's pod CIDR of that family, and their traffic to the control plane
// (which leaves the pod range) is masqueraded behind the node's address, so that the control
// plane needs no pod routes. Tunnels run between the nodes' IPv4 addresses (the agent's
// default underlay) unless the agent has no IPv4 at all: an IPv6-only cluster's tunnel
// endpoints are the nodes' IPv6 addresses.
func familyArgs(c Cluster) []string {
	v4, v6 := strconv.FormatBool(c.Family != lab.IPv6), strconv.FormatBool(c.ClusterCIDR6 != nil)
	underlay := lab.IPv4
	if c.Family == lab.IPv6 {
		underlay = lab.IPv6
	}
	return []string{
		"--enable-ipv4=" + v4, "--k8s-require-ipv4-pod-cidr=" + v4, "--enable-ipv4-masquerade=" + v4,
		"--enable-ipv6=" + v6, "--k8s-require-ipv6-pod-cidr=" + v6, "--enable-ipv6-masquerade=" + v6,
		"--underlay-protocol=" + underlay,
	}
}

// serviceArgs say who serves Services and masquerades. Without kube-proxy replacement,
// kube-proxy does, and iptables masquerades. With it, the agent's BPF programs do both: the
// socket load balancer (forced on by kube-proxy replacement in 1.19) translates at connect()
// in the node's cgroup subtree, NodePort and masquerading run on the uplink, and BPF host
// routing hands packets between pods and the uplink without the node's iptables.
func (d Cilium) serviceArgs() []string {
	if !d.KPR {
		return []string{"--kube-proxy-replacement=false", "--bpf-lb-sock=false", "--enable-bpf-masquerade=false"}
	}
	return []string{
		"--kube-proxy-replacement=true",
		"--bpf-lb-sock=true",
		"--enable-bpf-masquerade=true",
		"--enable-host-legacy-routing=false",
		// Its requirements (pkg/egressgateway): CRD identities, IPv4 and BPF masquerading, no
		// CiliumEndpointSlice; kube-proxy replacement is not among them.
		"--enable-egress-gateway=true",
	}
}

// EgressGatewayPolicy implements WithEgressGateway: a CiliumEgressGatewayPolicy for every pod,
// with kube-proxy replacement (the deployment that has BPF masquerading); "" without. Cilium
// takes the gateway's IPv6 source only from an interface (an egressIP is IPv4 alone), so a
// policy with an IPv6 destination names the interface, whose first address of each family the
// traffic leaves with.
func (d Cilium) EgressGatewayPolicy(g EgressGateway) string {
	if !d.KPR {
		return ""
	}
	via := fmt.Sprintf("egressIP: %q", g.EgressIP)
	for _, c := range g.Destinations {
		if strings.Contains(c, ":") {
			via = fmt.Sprintf("interface: %q", g.Interface)
		}
	}
	quoted := make([]string, len(g.Destinations))
	for i, c := range g.Destinations {
		quoted[i] = strconv.Quote(c)
	}
	return fmt.Sprintf(`apiVersion: cilium.io/v2
kind: CiliumEgressGatewayPolicy
metadata:
  name: cnibench-egress-gateway
spec:
  selectors:
    - podSelector: {}
  destinationCIDRs: [%s]
  egressGateway:
    nodeSelector:
      matchLabels: {%q: "true"}
    %s
`, strings.Join(quoted, ", "), g.Label, via)
}

// operatorArgv is the operator's command line: it creates Cilium's CRDs and garbage-collects
// identities, endpoints and nodes; with kubernetes IPAM it allocates nothing.
func (d Cilium) operatorArgv(c Cluster) []string {
	argv := []string{
		c.Bin(ciliumOperator),
		"--k8s-kubeconfig-path=" + c.Kubeconfig,
		"--cluster-name=" + c.Name,
		"--cluster-id=0",
		"--identity-allocation-mode=crd",
		"--ipam=kubernetes",
		"--cilium-pod-namespace=kube-system",
		"--enable-gops=false",
		"--enable-metrics=false",
		"--operator-api-serve-addr=127.0.0.1:9234",
		"--operator-prometheus-serve-addr=",
		// Node taints and conditions are the kubelet's and the provider's business here.
		"--set-cilium-node-taints=false",
		"--remove-cilium-node-taints=false",
		"--set-cilium-is-up-condition=false",
	}
	if d.KPR {
		// The operator registers the policy CRD only when told (a hidden flag); agents with the
		// egress gateway wait for it.
		argv = append(argv, "--enable-egress-gateway=true")
	}
	return argv
}
