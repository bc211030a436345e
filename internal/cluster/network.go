package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
)

// underlayBridge is the bridge in the control-plane namespace that every node plugs into.
const underlayBridge = "cnbu0"

// setupNetwork builds the underlay: a control-plane namespace holding a bridge, one namespace
// per node with a veth into it, and the root namespace's single veth. The unreachable route for
// the whole block goes in first, so no packet for the lab can ever leave through the host's
// default route, even while the rest is half built.
func setupNetwork(ctx context.Context, ac *actionContext) error {
	s, p := ac.spec, ac.spec.Plan()
	if err := run(ctx, "ip", "route", "add", "unreachable", p.Block().String()); err != nil {
		return fmt.Errorf("install unreachable route: %w", err)
	}
	if p.HasIPv6() {
		if err := run(ctx, "ip", "-6", "route", "add", "unreachable", p.Block6().String()); err != nil {
			return fmt.Errorf("install unreachable route: %w", err)
		}
	}
	if err := run(ctx, "ip", "netns", "add", s.CtlNetns()); err != nil {
		return fmt.Errorf("create namespace: %w", err)
	}
	ctl := []string{
		"link set lo up",
		fmt.Sprintf("link add %s mtu %d type bridge", underlayBridge, s.UnderlayMTU()),
		"link set " + underlayBridge + " up",
		fmt.Sprintf("addr add %s/24 dev %s", p.ControlPlaneIP(), underlayBridge),
	}
	if p.HasIPv6() {
		// nodad: the lab's addresses are unique by plan, and a tentative address would delay
		// every start that binds it.
		ctl = append(ctl, fmt.Sprintf("addr add %s/64 dev %s nodad", p.ControlPlaneIP6(), underlayBridge))
	}
	if err := ipBatch(ctx, s.CtlNetns(), ctl); err != nil {
		return err
	}
	// Every link of the lab has the underlay's MTU, this one too, so that the bridge has one.
	mtu := strconv.Itoa(s.UnderlayMTU())
	if err := run(ctx, "ip", "link", "add", s.HostLink(), "mtu", mtu, "type", "veth", "peer", "name", "host", "mtu", mtu, "netns", s.CtlNetns()); err != nil {
		return fmt.Errorf("create root veth: %w", err)
	}
	// The root end needs no IPv6 (disabling it keeps router solicitations and MLD reports off
	// it), and must never forward: on a host with forwarding on, a packet from the lab arriving
	// here could otherwise leave through the host's default route.
	for key, val := range map[string]string{
		"ipv6/conf/" + s.HostLink() + "/disable_ipv6": "1",
		"ipv4/conf/" + s.HostLink() + "/forwarding":   "0",
	} {
		if err := os.WriteFile("/proc/sys/net/"+key, []byte(val), 0o644); err != nil {
			return fmt.Errorf("set %s: %w", key, err)
		}
	}
	if err := run(ctx, "ip", "addr", "add", p.HostIP().String()+"/24", "dev", s.HostLink()); err != nil {
		return err
	}
	if err := run(ctx, "ip", "link", "set", s.HostLink(), "up"); err != nil {
		return err
	}
	// The control plane never forwards: it is where the nodes' default route ends.
	if err := sysctlIn(ctx, s.CtlNetns(), map[string]string{"net.ipv4.ip_forward": "0", "net.ipv6.conf.all.forwarding": "0"}); err != nil {
		return err
	}
	ctl = []string{"link set host master " + underlayBridge + " up"}
	for i := 1; i <= s.Nodes && !ac.dp.AllocateNodeCIDRs(); i++ {
		// The control plane reaches pods (webhooks, apiserver proxy, replies to pods calling the
		// API server) through their node; allocated CIDRs are routed once known (routePodCIDR).
		for j, cidr := range p.PodCIDRs(i) {
			ctl = append(ctl, fmt.Sprintf("route add %s via %s", cidr, p.NodeIPs(i)[j]))
		}
	}
	for i := 1; i <= s.Nodes; i++ {
		if err := setupNodeNetwork(ctx, s, i); err != nil {
			return err
		}
	}
	return ipBatch(ctx, s.CtlNetns(), ctl)
}

// nodeUplink is each node's underlay interface inside its namespace.
const nodeUplink = "eth0"

// setupNodeNetwork creates node i's namespace on the underlay, with its addresses, routes
// and forwarding.
func setupNodeNetwork(ctx context.Context, s Spec, i int) error {
	p := s.Plan()
	ns := s.NodeNetns(i)
	if err := plugIntoUnderlay(ctx, s, ns, fmt.Sprintf("n%d", i)); err != nil {
		return err
	}
	cmds := []string{
		"link set lo up",
		fmt.Sprintf("addr add %s/24 dev %s", p.NodeIP(i), nodeUplink),
		"link set " + nodeUplink + " up",
		// Service IPs need a route before kube-proxy's DNAT applies; the control-plane namespace
		// does not forward, so anything else sent this way dies there.
		fmt.Sprintf("route add default via %s", p.ControlPlaneIP()),
	}
	forwarding := map[string]string{"net.ipv4.ip_forward": "1"}
	if p.HasIPv6() {
		cmds = append(cmds, fmt.Sprintf("addr add %s/64 dev %s nodad", p.NodeIP6(i), nodeUplink),
			fmt.Sprintf("route add default via %s", p.ControlPlaneIP6()))
		forwarding["net.ipv6.conf.all.forwarding"] = "1"
	}
	if err := ipBatch(ctx, ns, cmds); err != nil {
		return err
	}
	// Read back, since the fingerprint states it and every datapath sizes its pods from it.
	if mtu, err := linkMTU(ctx, ns, nodeUplink); err != nil || mtu != s.UnderlayMTU() {
		return fmt.Errorf("node %d: uplink MTU %d, expected %d (%v)", i, mtu, s.UnderlayMTU(), err)
	}
	if err := sysctlIn(ctx, ns, forwarding); err != nil {
		return err
	}
	return sysctlIn(ctx, ns, map[string]string{
		"net.bridge.bridge-nf-call-iptables":  "1",
		"net.bridge.bridge-nf-call-ip6tables": "1",
		"net.ipv4.conf.all.rp_filter":         "0",
	})
}

// plugIntoUnderlay creates namespace ns with its uplink (nodeUplink) on a veth whose other end,
// port, is on the underlay bridge.
func plugIntoUnderlay(ctx context.Context, s Spec, ns, port string) error {
	if err := run(ctx, "ip", "netns", "add", ns); err != nil {
		return fmt.Errorf("create namespace: %w", err)
	}
	return ipBatch(ctx, s.CtlNetns(), []string{
		// A veth's ends take their MTUs separately.
		fmt.Sprintf("link add %[1]s mtu %[2]d type veth peer name %[3]s mtu %[2]d netns %[4]s", port, s.UnderlayMTU(), nodeUplink, ns),
		fmt.Sprintf("link set %s master %s up", port, underlayBridge),
	})
}

// linkMTU reads a link's MTU in a namespace.
func linkMTU(ctx context.Context, netns, dev string) (int, error) {
	out, err := exec.CommandContext(ctx, "ip", "-n", netns, "-o", "link", "show", "dev", dev).Output()
	if err != nil {
		return 0, fmt.Errorf("ip -n %s link show %s: %w", netns, dev, err)
	}
	fields := strings.Fields(string(out))
	if i := slices.Index(fields, "mtu"); i >= 0 && i+1 < len(fields) {
		return strconv.Atoi(fields[i+1])
	}
	return 0, fmt.Errorf("ip -n %s link show %s: no MTU in %q", netns, dev, out)
}

// ipBatch runs iproute2 commands in a namespace in one process.
func ipBatch(ctx context.Context, netns string, cmds []string) error {
	cmd := exec.CommandContext(ctx, "ip", "-n", netns, "-batch", "-")
	cmd.Stdin = strings.NewReader(strings.Join(cmds, "\n") + "\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip -n %s: %w: %s", netns, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// sysctlIn sets network sysctls of a namespace; /proc/sys/net shows the writer's namespace,
// so the write happens from a process inside it.
func sysctlIn(ctx context.Context, netns string, kv map[string]string) error {
	args := []string{"--net=/run/netns/" + netns, "sysctl", "-q", "-w"}
	for k, v := range kv {
		args = append(args, k+"="+v)
	}
	if err := run(ctx, "nsenter", args...); err != nil {
		return fmt.Errorf("sysctl in %s: %w", netns, err)
	}
	return nil
}

// routePodCIDR routes a node's pod CIDRs, as the controller-manager allocated it, from the
// control-plane namespace to the node.
func routePodCIDR(ctx context.Context, s Spec, node string, cidrs []string) error {
	p := s.Plan()
	for i := 1; i <= s.Nodes; i++ {
		if s.NodeName(i) != node {
			continue
		}
		var cmds []string
		for _, cidr := range cidrs {
			via := p.NodeIP(i)
			if strings.Contains(cidr, ":") {
				via = p.NodeIP6(i)
			}
			cmds = append(cmds, fmt.Sprintf("route replace %s via %s", cidr, via))
		}
		return ipBatch(ctx, s.CtlNetns(), cmds)
	}
	return fmt.Errorf("node %s registered but is not part of cluster %s", node, s.Name)
}
