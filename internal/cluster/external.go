package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/cnibench/cnibench/internal/agentcmd"
	"github.com/cnibench/cnibench/internal/cluster/datapath"
	"github.com/cnibench/cnibench/internal/external"
	"github.com/cnibench/cnibench/internal/kube"
)

// The external host of the lab: a namespace on the underlay that is no node, standing for a
// server outside the cluster. It holds two addresses: pods reach ExternalIP directly (their own
// node SNATs them) and ExternalViaGatewayIP through the egress gateway node (which SNATs them),
// so both egress paths are measured side by side without reconfiguring anything between
// samples. A cluster with IPv6 gives it two more in the lab's own IPv6 range, the same two
// roles (ExternalIP6, ExternalViaGatewayIP6).
const (
	// externalPort is the external host's port on the underlay bridge.
	externalPort = "ext"
	// egressTable is the nft table of each node's egress SNAT.
	egressTable = "cnb_egress"
)

// ExternalIP is the external host's address that pods reach directly.
func (p Plan) ExternalIP() net.IP { return net.IPv4(10, p.octet(), 0, 200).To4() }

// ExternalViaGatewayIP is the external host's address that every node but the gateway routes
// through the egress gateway node.
func (p Plan) ExternalViaGatewayIP() net.IP { return net.IPv4(10, p.octet(), 0, 201).To4() }

// ExternalIP6 is the external host's IPv6 address that pods reach directly; its last group
// reads like ExternalIP's last octet.
func (p Plan) ExternalIP6() net.IP { return p.v6(0, "200") }

// ExternalViaGatewayIP6 is the external host's IPv6 address routed through the egress gateway.
func (p Plan) ExternalViaGatewayIP6() net.IP { return p.v6(0, "201") }

// ExtNetns is the external host's network namespace.
func (s Spec) ExtNetns() string { return "cnb-" + s.Name + "-ext" }

// GatewayNode is the 1-based index of the egress gateway node: the last one, so that the
// client's node (the first) is never its own gateway; 0 for a one-node cluster, which has none.
func (s Spec) GatewayNode() int {
	if s.Nodes < 2 {
		return 0
	}
	return s.Nodes
}

// External describes the external host and egress gateway of a cluster created with them.
type External struct {
	Control     string // host:port of its agent, over IPv4
	Direct      string // address pods reach with their own node's SNAT
	ViaGateway  string // address pods reach through the gateway; empty without a gateway
	Direct6     string // Direct's IPv6 counterpart; empty on a cluster without IPv6
	ViaGateway6 string // ViaGateway's IPv6 counterpart; empty without IPv6 or a gateway
	GatewayNode string // the gateway node's name
}

// External returns the cluster's external host, or false when it was created without one.
func (s Spec) External() (External, bool) {
	if !s.HasExternal {
		return External{}, false
	}
	p := s.Plan()
	e := External{Control: net.JoinHostPort(p.ExternalIP().String(), fmt.Sprint(external.DefaultServePort)), Direct: p.ExternalIP().String()}
	g := s.GatewayNode()
	if g > 0 {
		e.ViaGateway, e.GatewayNode = p.ExternalViaGatewayIP().String(), s.NodeName(g)
	}
	if s.External6 {
		e.Direct6 = p.ExternalIP6().String()
		if g > 0 {
			e.ViaGateway6 = p.ExternalViaGatewayIP6().String()
		}
	}
	return e, true
}

// setupExternal wires the external host onto the underlay and every node's egress towards it,
// labels the gateway node, and starts the external host's agent. Its namespace is the
// cluster's like the nodes' (delete removes cnb-<cluster>-*), its agent runs in the cluster's
// cgroup like every daemon.
func setupExternal(ctx context.Context, ac *actionContext) error {
	s, p := ac.spec, ac.spec.Plan()
	ns := s.ExtNetns()
	if err := plugIntoUnderlay(ctx, s, ns, externalPort); err != nil {
		return err
	}
	cmds := []string{
		"link set lo up",
		fmt.Sprintf("addr add %s/24 dev %s", p.ExternalIP(), nodeUplink),
		fmt.Sprintf("addr add %s/24 dev %s", p.ExternalViaGatewayIP(), nodeUplink),
		"link set " + nodeUplink + " up",
	}
	// Its IPv6 addresses on the nodes' /64; nodad, as for the nodes': unique by plan.
	listen, certIPs := "0.0.0.0", []net.IP{p.ExternalIP(), p.ExternalViaGatewayIP(), net.IPv4(127, 0, 0, 1)}
	if p.HasIPv6() {
		cmds = append(cmds, fmt.Sprintf("addr add %s/64 dev %s nodad", p.ExternalIP6(), nodeUplink),
			fmt.Sprintf("addr add %s/64 dev %s nodad", p.ExternalViaGatewayIP6(), nodeUplink))
		listen, certIPs = "::", append(certIPs, p.ExternalIP6(), p.ExternalViaGatewayIP6(), net.IPv6loopback)
	}
	if err := ipBatch(ctx, ns, cmds); err != nil {
		return err
	}
	policy := egressGatewayPolicy(ac.dp, s)
	for i := 1; i <= s.Nodes; i++ {
		if err := setupNodeEgress(ctx, s, i, policy == ""); err != nil {
			return fmt.Errorf("egress of %s: %w", s.NodeName(i), err)
		}
	}
	if err := labelGatewayNode(ctx, ac); err != nil {
		return err
	}
	if policy != "" {
		if err := applyEgressGatewayPolicy(ctx, kubectlOf(ac.layout, s.Name, ac.bins), policy); err != nil {
			return err
		}
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("locate the cnibench binary for the external host's agent: %w", err)
	}
	// Made here rather than by the agent, so that it exists, readable by runs, before the
	// agent answers.
	tokenFile := ac.layout.ExternalTokenFile(s.Name)
	if _, _, err := external.TokenFile(tokenFile); err != nil {
		return fmt.Errorf("the external host's agent: %w", err)
	}
	// Runs reach the agent over HTTPS, as a user's agent should be reached, so the egress
	// tests cover that path; the certificate names every address a run reaches it by.
	cert, key, err := issueCert(ac.layout, s.Name, externalCert, certIPs...)
	if err != nil {
		return fmt.Errorf("the external host's agent: %w", err)
	}
	r, err := ac.procs.start(daemon{name: "ext-agent", netns: ns, cgroup: s.CgroupRoot() + "/ext",
		argv: agentcmd.ServeCmd{Self: self, Listen: net.JoinHostPort(listen, fmt.Sprint(external.DefaultServePort)),
			TokenFile: tokenFile, TLSCert: cert, TLSKey: key}.Argv()})
	if err != nil {
		return err
	}
	if err := ac.procs.poll(ctx, "the external host's agent", ac.waits.step(6, 20*time.Second), func() (bool, error) {
		if err := r.exited(); err != nil {
			return false, err
		}
		return exec.CommandContext(ctx, "ip", "netns", "exec", ns, "bash", "-c",
			fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d", external.DefaultServePort)).Run() == nil, nil
	}); err != nil {
		return err
	}
	ac.spec.HasExternal, ac.spec.External6 = true, p.HasIPv6()
	return ac.save()
}

// labelGatewayNode labels the egress gateway node, when the cluster has one.
func labelGatewayNode(ctx context.Context, ac *actionContext) error {
	s := ac.spec
	g := s.GatewayNode()
	if g == 0 {
		return nil
	}
	// Retried while the wait lasts: a busy API server (a datapath still starting) times
	// requests out.
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{kube.LabelEgressGateway: "true"}}})
	var last error
	if err := ac.procs.poll(ctx, "the egress gateway label on "+s.NodeName(g), ac.waits.step(3, time.Minute), func() (bool, error) {
		_, last = ac.client.CoreV1().Nodes().Patch(ctx, s.NodeName(g), types.MergePatchType, patch, metav1.PatchOptions{})
		return last == nil, nil
	}); err != nil {
		return fmt.Errorf("label the egress gateway %s: %w (last: %v)", s.NodeName(g), err, last)
	}
	return nil
}

// setupNodeEgress gives node i the egress every cluster of the field has, whatever its
// datapath (nodeEgress says what it is).
func setupNodeEgress(ctx context.Context, s Spec, i int, plainGateway bool) error {
	ns := s.NodeNetns(i)
	rules, routes, sysctls := nodeEgress(s, i, plainGateway)
	if err := nftIn(ctx, ns, egressRuleset(rules)); err != nil {
		return err
	}
	if len(routes) > 0 {
		if err := ipBatch(ctx, ns, routes); err != nil {
			return err
		}
	}
	return sysctlIn(ctx, ns, sysctls)
}

// nodeEgress is node i's egress, in both families the cluster has: pods' traffic to the
// external host leaves with the node's address (datapaths that masquerade already did it; the
// bridge datapath does not), and traffic to the gateway address goes to the gateway node,
// which SNATs it to its own. Redirects are off: the gateway sends packets back out of the
// interface they came in by, which would otherwise tell the client's node to bypass it.
// plainGateway says whether cnibench makes the gateway (the datapath has none of its own).
func nodeEgress(s Spec, i int, plainGateway bool) (rules, routes []string, sysctls map[string]string) {
	p := s.Plan()
	g := s.GatewayNode()
	type family struct {
		nft                  string // nft's address match: ip or ip6
		pods                 *net.IPNet
		direct, via, gateway net.IP
		host                 string // a host route's prefix length
	}
	fams := []family{{"ip", p.ClusterCIDR(), p.ExternalIP(), p.ExternalViaGatewayIP(), p.NodeIP(g), "32"}}
	sysctls = map[string]string{
		"net.ipv4.conf.all.send_redirects":                "0",
		"net.ipv4.conf." + nodeUplink + ".send_redirects": "0",
		"net.ipv4.conf.all.accept_redirects":              "0",
	}
	if p.HasIPv6() {
		fams = append(fams, family{"ip6", p.ClusterCIDR6(), p.ExternalIP6(), p.ExternalViaGatewayIP6(), p.NodeIP6(g), "128"})
		// IPv6 has no switch for sending them; the receiving side ignores them instead.
		sysctls["net.ipv6.conf.all.accept_redirects"] = "0"
		sysctls["net.ipv6.conf."+nodeUplink+".accept_redirects"] = "0"
	}
	for _, f := range fams {
		rules = append(rules, fmt.Sprintf("oifname %q %s saddr %s %s daddr %s masquerade", nodeUplink, f.nft, f.pods, f.nft, f.direct))
		switch {
		case !plainGateway || g == 0:
		case g == i:
			rules = append(rules, fmt.Sprintf("oifname %q %s daddr %s masquerade", nodeUplink, f.nft, f.via))
		default:
			routes = append(routes, fmt.Sprintf("route add %s/%s via %s dev %s", f.via, f.host, f.gateway, nodeUplink))
		}
	}
	return rules, routes, sysctls
}

// egressRuleset is the nft script of a node's egress SNAT table, an inet table: its rules
// match IPv4 and IPv6 each by their own address family.
func egressRuleset(rules []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "table inet %s {\n\tchain postrouting {\n\t\ttype nat hook postrouting priority srcnat; policy accept;\n", egressTable)
	for _, r := range rules {
		b.WriteString("\t\t" + r + "\n")
	}
	b.WriteString("\t}\n}\n")
	return b.String()
}

// nftIn loads an nft script in a namespace.
func nftIn(ctx context.Context, netns, script string) error {
	cmd := exec.CommandContext(ctx, "ip", "netns", "exec", netns, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("nft in %s: %w: %s", netns, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// egressGatewayPolicy is the datapath's own egress gateway policy for the gateway address, ""
// when the datapath has none (cnibench then routes and SNATs it itself) or the cluster no
// gateway node.
func egressGatewayPolicy(dp datapath.Datapath, s Spec) string {
	p := s.Plan()
	wg, ok := dp.(datapath.WithEgressGateway)
	if !ok || s.GatewayNode() == 0 {
		return ""
	}
	g := datapath.EgressGateway{Destinations: []string{p.ExternalViaGatewayIP().String() + "/32"},
		Label: kube.LabelEgressGateway, EgressIP: p.NodeIP(s.GatewayNode()).String(), Interface: nodeUplink}
	if p.HasIPv6() {
		g.Destinations = append(g.Destinations, p.ExternalViaGatewayIP6().String()+"/128")
	}
	return wg.EgressGatewayPolicy(g)
}

// applyEgressGatewayPolicy applies the datapath's policy once its CRD is served.
func applyEgressGatewayPolicy(ctx context.Context, k datapath.Kubectl, policy string) error {
	// The CRD comes from the datapath's operator, which may still be registering it.
	var last error
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		last = k.Run(ctx, strings.NewReader(policy), "apply", "-f", "-")
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("apply the egress gateway policy: %w (last: %v)", err, last)
	}
	return nil
}
