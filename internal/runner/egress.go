package runner

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cnibench/cnibench/internal/agentcmd"
	"github.com/cnibench/cnibench/internal/external"
	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/setting"
	"github.com/cnibench/cnibench/internal/suite"
)

// externalHost is the server outside a target's cluster that the egress paths reach: its agent
// runs their servers and reports the source address each client's traffic arrives with.
type externalHost struct {
	control    string // host:port of its agent
	tokenFile  string // the agent's token, read at prepare
	token      string
	caFile     string // the CA of the agent's TLS certificate, read at prepare; empty: plain HTTP
	ca         string
	direct     string // address the egress path targets, in the target's family (ofFamily)
	viaGateway string // address the egress-gateway path targets; empty: no gateway
	// direct6 and viaGateway6 are the IPv6 addresses beside direct and viaGateway, until
	// ofFamily picks the target's.
	direct6, viaGateway6 string
	// gatewaySource is the address the host sees through the gateway, found at prepare.
	gatewaySource, gatewayNode string
	// ports are the external servers' ports, by the run's server index, then pair.
	ports map[int][]int
}

// egressPaths lists the suite's paths that leave the cluster.
func egressPaths(s suite.Suite) []string {
	var out []string
	for _, p := range s.Paths {
		if suite.IsEgress(p) {
			out = append(out, p)
		}
	}
	return out
}

// prepareExternal checks that the target can take the suite's egress paths, finds its gateway
// and starts the servers of every pair on the external host. It runs once the pods are up: the
// client pod is where the external host is reached from.
func (r *run) prepareExternal(ctx context.Context, tg *target, ext *externalHost) error {
	paths := egressPaths(r.opts.Suite)
	if len(paths) == 0 {
		return nil
	}
	if ext == nil {
		return fmt.Errorf("paths %s: %w", strings.Join(paths, ", "), &setting.Error{Name: "external",
			Want: "the target has no external host: a local cluster created by an older cnibench has none (delete it), a remote one needs its HOST:PORT here or the target's external.address (a machine running `cnibench agent serve`)"})
	}
	ext, err := ext.ofFamily(tg.fixture.Family())
	if err != nil {
		return fmt.Errorf("paths %s: %w", strings.Join(paths, ", "), err)
	}
	token, err := external.ReadToken(ext.tokenFile)
	if err != nil {
		return fmt.Errorf("paths %s: the external host's agent: %w", strings.Join(paths, ", "), &setting.Error{Name: "externalTokenFile",
			Err: fmt.Errorf("%w (a local cluster created by an older cnibench has none: delete it; a remote target needs the agent's token file here or in external.tokenFile)", err)})
	}
	ext.token = token
	if ext.caFile != "" {
		ca, err := os.ReadFile(ext.caFile)
		if err != nil {
			return fmt.Errorf("paths %s: the CA of the external host's agent: %w", strings.Join(paths, ", "), &setting.Error{Name: "externalCAFile", Err: fmt.Errorf("%w (set here or in external.caFile)", err)})
		}
		ext.ca = string(ca)
	}
	if suite.PathsNeed(paths, suite.NeedsEgressGateway) {
		if ext.viaGateway == "" {
			return fmt.Errorf("path egress-gateway: %w", &setting.Error{Name: "externalGatewayAddress", Want: "the target has no gateway address: a local cluster needs at least 2 nodes, a remote one this address (or external.gatewayAddress)"})
		}
		node, src, err := gatewayOf(ctx, tg.client, tg.fixture.Family())
		if err != nil {
			return fmt.Errorf("path egress-gateway: %w", err)
		}
		if ext.gatewayNode != "" && node != ext.gatewayNode {
			return fmt.Errorf("path egress-gateway: node %s is labelled %s, the cluster's gateway is %s", node, kube.LabelEgressGateway, ext.gatewayNode)
		}
		ext.gatewayNode, ext.gatewaySource = node, src
		tg.fingerprint["egress_gateway"] = node + " (SNAT to " + src + ")"
	}
	tg.ext = ext
	tg.fingerprint["external_host"] = ext.direct
	return r.startExternalServers(ctx, tg)
}

// startExternalServers asks the external host for one server per server command and pair, on
// ports it picks: pairs share the host, so each listens on its own, and a host that outlives
// runs picks ports the last run's connections do not hold.
func (r *run) startExternalServers(ctx context.Context, tg *target) error {
	cmd := agentcmd.ExternalServersCmd{Server: tg.ext.control, Token: tg.ext.token, CA: tg.ext.ca}
	f := tg.fixture
	var order []int // the server index of each --start
	started := map[int]bool{}
	for _, w := range r.opts.Suite.Workloads {
		ew := w.Engine(r.opts.Suite.Duration.Duration)
		j, ok := tg.servers[ew.ID()]
		if !ok || started[j] {
			continue // runs in the client pod alone, or shares a server already asked for
		}
		started[j] = true
		for range f.Spec.Pairs() {
			cmd.Start = append(cmd.Start, ew.ID()+"=0")
			order = append(order, j)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	out, err := tg.client.Exec(ctx, tg.namespace, f.Pod(kube.RoleClient, 0).Name, kube.ClientContainer, cmd.Argv())
	if err != nil {
		return fmt.Errorf("external host %s: %w", tg.ext.control, err)
	}
	var got []external.Server
	if err := json.Unmarshal(out, &got); err != nil || len(got) != len(order) {
		return fmt.Errorf("external host %s: expected %d servers with their ports, got %q", tg.ext.control, len(order), out)
	}
	tg.ext.ports = map[int][]int{}
	for k, s := range got {
		tg.ext.ports[order[k]] = append(tg.ext.ports[order[k]], s.Port)
	}
	return nil
}

// stopExternalServers ends the servers the run started on the external host, while a client
// pod is still there to reach it from.
func (r *run) stopExternalServers(ctx context.Context, tg *target) error {
	if tg.ext == nil || tg.fixture == nil || tg.fixture.Pod(kube.RoleClient, 0) == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := tg.client.Exec(ctx, tg.namespace, tg.fixture.Pod(kube.RoleClient, 0).Name, kube.ClientContainer,
		agentcmd.ExternalServersCmd{Server: tg.ext.control, Token: tg.ext.token, CA: tg.ext.ca, Stop: true}.Argv())
	return err
}

// gatewayOf finds the node labelled as the egress gateway and the address the external host
// sees its traffic of family come from: the label's value when it is an IP of that family,
// otherwise its InternalIP of that family.
func gatewayOf(ctx context.Context, c *kube.Client, family string) (node, source string, err error) {
	list, err := c.CS.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: kube.LabelEgressGateway})
	if err != nil {
		return "", "", fmt.Errorf("list nodes labelled %s: %w", kube.LabelEgressGateway, err)
	}
	if len(list.Items) != 1 {
		return "", "", fmt.Errorf("expected one node labelled %s (value: the address the external host sees, or true for its InternalIP), found %d", kube.LabelEgressGateway, len(list.Items))
	}
	n := list.Items[0]
	if v := n.Labels[kube.LabelEgressGateway]; kube.FamilyOf(v) == family {
		return n.Name, v, nil
	}
	for _, a := range n.Status.Addresses {
		if a.Type == "InternalIP" && kube.FamilyOf(a.Address) == family {
			return n.Name, a.Address, nil
		}
	}
	return "", "", fmt.Errorf("node %s has no InternalIP of %s", n.Name, family)
}

// target is the external address a path's clients connect to.
func (e *externalHost) target(p suite.Path) string {
	if p.Address == suite.AddrExternalViaGateway {
		return e.viaGateway
	}
	return e.direct
}

// proveSource asks the external host, from every client node of the sample, which source
// address its traffic arrives with, and fails unless it is the SNAT the path promises: the
// client's own node for egress, the gateway for egress-gateway. The question travels the same
// route as the sample (same pod, same destination address), so a datapath or gateway that does
// not do what the path says fails the sample instead of measuring another path.
func (r *run) proveSource(ctx context.Context, tg *target, path string, ends []pairEnd) error {
	p, _ := suite.PathOf(path)
	control := net.JoinHostPort(tg.ext.target(p), portOf(tg.ext.control))
	checked := map[string]bool{}
	for i, e := range ends {
		pod := tg.fixture.Pod(kube.RoleClient, i)
		node := hostIPOf(pod, tg.fixture.Family())
		if checked[node] {
			continue
		}
		checked[node] = true
		want, what := node, "its own node "+pod.Spec.NodeName
		if p.Address == suite.AddrExternalViaGateway {
			want, what = tg.ext.gatewaySource, "the gateway "+tg.ext.gatewayNode
		}
		tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		out, err := tg.client.Exec(tctx, tg.namespace, e.clientPod, kube.ClientContainer,
			agentcmd.WhoAmICmd{Server: control, Token: tg.ext.token, CA: tg.ext.ca}.Argv())
		cancel()
		if err != nil {
			return fmt.Errorf("path %s: prove the source address: %w", path, err)
		}
		if err := checkSource(path, strings.TrimSpace(string(out)), want, what); err != nil {
			return err
		}
	}
	return nil
}

// checkSource compares the source the external host saw with the one the path promises.
func checkSource(path, got, want, what string) error {
	if got != want {
		return fmt.Errorf("path %s: the client's traffic came from %s, expected %s (%s): it did not take the path's SNAT", path, got, want, what)
	}
	return nil
}

// hostIPOf is a pod's node's address of family, as the pod's status gives it: the node's
// address its traffic of that family leaves with.
func hostIPOf(pod *corev1.Pod, family string) string {
	for _, ip := range pod.Status.HostIPs {
		if kube.FamilyOf(ip.IP) == family {
			return ip.IP
		}
	}
	return pod.Status.HostIP
}

// ofFamily is the external host as a target of family reaches it: its addresses of that
// family, and its agent at the direct one (a remote host's agent at its address, when that is
// a name). A host without an address of the family is refused, naming the setting.
func (e externalHost) ofFamily(family string) (*externalHost, error) {
	pick := func(v4, v6 string) string {
		switch {
		case family == lab.IPv6 && v6 != "":
			return v6
		case family == lab.IPv6 && kube.FamilyOf(v4) == "":
			return v4 // a name: the pod's resolver picks
		case family != lab.IPv6:
			return v4
		}
		return ""
	}
	direct := pick(e.direct, e.direct6)
	if direct == "" {
		other := cmp.Or(e.direct, e.direct6)
		return nil, &setting.Error{Name: "external", Want: fmt.Sprintf("an external host with an %s address for the target's %s traffic; it has %s only (a local cluster's external host has IPv6 addresses when the cluster has IPv6 and was created by this cnibench: delete an older one; a remote target's external.address is of one family)", family, family, other)}
	}
	e.viaGateway = pick(e.viaGateway, e.viaGateway6)
	if kube.FamilyOf(direct) != "" {
		e.control = net.JoinHostPort(direct, portOf(e.control))
	}
	e.direct, e.direct6, e.viaGateway6 = direct, "", ""
	return &e, nil
}

// portOf is the port of a host:port.
func portOf(hostPort string) string {
	_, port, _ := net.SplitHostPort(hostPort)
	return port
}

// externalHostOf is the run's own record of the external host a provider offers; nil for none.
func externalHostOf(e *External) *externalHost {
	if e == nil {
		return nil
	}
	return &externalHost{control: e.Control, direct: e.Direct, viaGateway: e.ViaGateway, direct6: e.Direct6, viaGateway6: e.ViaGateway6,
		gatewayNode: e.GatewayNode, tokenFile: e.TokenFile, caFile: e.CAFile}
}
