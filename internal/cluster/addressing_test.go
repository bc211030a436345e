package cluster

import (
	"errors"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/setting"
)

func mustCIDR(t *testing.T, s string) *net.IPNet {
	t.Helper()
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// lastAddr is an IPv4 network's last address.
func lastAddr(n *net.IPNet) net.IP {
	ip := append(net.IP(nil), n.IP.To4()...)
	for i := range ip {
		ip[i] |= ^n.Mask[i]
	}
	return ip
}

func TestPlanRangesAreDisjointAndInsideBlock(t *testing.T) {
	p := Plan{Index: 3}
	if got := p.Block().String(); got != "10.203.0.0/16" {
		t.Fatalf("block = %s", got)
	}
	ranges := []*net.IPNet{p.Underlay(), p.ServiceCIDR(), p.ClusterCIDR(), p.Secondary()}
	for i := 1; i <= lab.MaxNodes; i++ {
		if n := p.SecondaryCIDR(i); !p.Secondary().Contains(n.IP) || !p.Secondary().Contains(lastAddr(n)) {
			t.Errorf("node %d: secondary range %s outside %s", i, n, p.Secondary())
		}
	}
	for i, a := range ranges {
		if !p.Block().Contains(a.IP) {
			t.Errorf("%s outside block", a)
		}
		for j, b := range ranges {
			if i != j && overlaps(a, b) {
				t.Errorf("%s overlaps %s", a, b)
			}
		}
	}
	for i := 1; i <= lab.MaxNodes; i++ {
		if !p.ClusterCIDR().Contains(p.PodCIDR(i).IP) || !p.Underlay().Contains(p.NodeIP(i)) {
			t.Errorf("node %d: pod CIDR %s or node IP %s out of range", i, p.PodCIDR(i), p.NodeIP(i))
		}
		if p.NodeIP(i).Equal(p.HostIP()) || p.NodeIP(i).Equal(p.ControlPlaneIP()) {
			t.Errorf("node %d address %s collides", i, p.NodeIP(i))
		}
	}
	if !p.ServiceCIDR().Contains(p.DNSServiceIP()) || !p.ServiceCIDR().Contains(p.KubernetesServiceIP()) {
		t.Error("service IPs outside the service range")
	}
}

func TestIPv6PlanMirrorsIPv4(t *testing.T) {
	p := Plan{Index: 3, Family: lab.DualStack}
	for got, want := range map[string]string{
		p.Block6().String():           "fdcb:0:203::/48",
		p.NodeIP6(2).String():         "fdcb:0:203::12",
		p.ServiceCIDR6().String():     "fdcb:0:203:10::/112",
		p.DNSServiceIP6().String():    "fdcb:0:203:10::a",
		p.ClusterCIDR6().String():     "fdcb:0:203:100::/56",
		p.PodCIDR6(2).String():        "fdcb:0:203:102::/64",
		p.PodGateway6(2).String():     "fdcb:0:203:102::1",
		joined(p.ServiceCIDRs()):      "10.203.16.0/20,fdcb:0:203:10::/112",
		joined(p.NodeIPs(1)):          "10.203.0.11,fdcb:0:203::11",
		p.APIServerIP().String():      "10.203.0.1",
		joined(p.DNSServiceIPs()[:1]): "10.203.16.10",
	} {
		if got != want {
			t.Errorf("got %s, want %s", got, want)
		}
	}
	ranges := []*net.IPNet{p.ServiceCIDR6(), p.ClusterCIDR6(), mustCIDR(t, "fdcb:0:203::/64")}
	for i, a := range ranges {
		if !p.Block6().Contains(a.IP) {
			t.Errorf("%s outside %s", a, p.Block6())
		}
		for j, b := range ranges[:i] {
			if overlaps(a, b) {
				t.Errorf("%s overlaps %s (%d)", a, b, j)
			}
		}
	}
	for i := 1; i <= lab.MaxNodes; i++ {
		if !p.ClusterCIDR6().Contains(p.PodCIDR6(i).IP) || p.PodCIDR6(i).Contains(p.PodCIDR6(i+1).IP) {
			t.Errorf("node %d: IPv6 pod CIDR %s outside the cluster's or overlapping the next", i, p.PodCIDR6(i))
		}
	}
	v6 := Plan{Index: 3, Family: lab.IPv6}
	if joined(v6.ClusterCIDRs()) != "fdcb:0:203:100::/56" || v6.APIServerIP().String() != "fdcb:0:203::1" || v6.HasIPv4() {
		t.Errorf("IPv6-only plan: %s, API server %s", joined(v6.ClusterCIDRs()), v6.APIServerIP())
	}
	if v4 := (Plan{Index: 3}); v4.HasIPv6() || joined(v4.PodCIDRs(1)) != "10.203.129.0/24" {
		t.Errorf("IPv4 plan: %s", joined(v4.PodCIDRs(1)))
	}
	// A host route into either block makes the index unusable.
	// A host route into the IPv6 block makes the index unusable for a cluster with IPv6 only.
	ula := []*net.IPNet{mustCIDR(t, "fd00::/8")}
	if clashes(p, ula) == nil || clashes(p, []*net.IPNet{mustCIDR(t, "::/0"), mustCIDR(t, "fdcb:0:204::/48")}) != nil || clashes(Plan{Index: 3}, ula) != nil {
		t.Error("clashes: wrong for the IPv6 block")
	}
	if got, err := pickIndex(nil, ula, lab.IPv6); err == nil {
		t.Errorf("pickIndex under a host route over all of fd00::/8 = %d, want no block", got)
	}
	if _, err := chooseIndex("10.203.0.0/16", nil, ula, lab.DualStack); err == nil || !strings.Contains(err.Error(), "collides with the host route fd00::/8") {
		t.Errorf("chooseIndex of a dual-stack block under fd00::/8: %v", err)
	}
}

func TestPickIndexSkipsUsedAndCollidingBlocks(t *testing.T) {
	routes := []*net.IPNet{
		mustCIDR(t, "0.0.0.0/0"),     // the default route collides with nothing
		mustCIDR(t, "10.201.5.0/24"), // inside block 1
		mustCIDR(t, "10.192.0.0/10"), // covers 10.192-10.255: every block
		mustCIDR(t, "192.0.2.0/24"),  // unrelated
	}
	if _, err := pickIndex(nil, routes, ""); err == nil || !strings.Contains(err.Error(), "no free address block") {
		t.Errorf("a /10 over every block: err = %v", err)
	}
	got, err := pickIndex(map[int]bool{0: true}, routes[:2], "")
	if err != nil || got != 2 {
		t.Errorf("pickIndex = %d, %v; want 2 (0 used, 1 collides)", got, err)
	}
}

func TestChooseIndexValidatesSubnet(t *testing.T) {
	routes := []*net.IPNet{mustCIDR(t, "10.230.0.0/16")}
	for _, bad := range []string{"10.1.0.0/16", "10.210.0.0/24", "192.168.0.0/16", "nonsense", "10.255.0.0/16"} {
		if _, err := chooseIndex(bad, nil, nil, ""); err == nil || !strings.Contains(err.Error(), "subnet: ") {
			t.Errorf("subnet %q: err = %v", bad, err)
		}
	}
	if _, err := chooseIndex("10.230.0.0/16", nil, routes, ""); err == nil || !strings.Contains(err.Error(), "collides with the host route 10.230.0.0/16") {
		t.Errorf("colliding subnet: err = %v", err)
	}
	if _, err := chooseIndex("10.204.0.0/16", map[int]bool{4: true}, nil, ""); err == nil {
		t.Error("subnet of another cluster accepted")
	}
	if got, err := chooseIndex("10.204.0.0/16", nil, routes, ""); err != nil || got != 4 {
		t.Errorf("chooseIndex = %d, %v", got, err)
	}
}

func TestParseRouteDests(t *testing.T) {
	out := `default via 192.0.2.1 dev eth0
192.0.2.0/24 dev eth0 proto kernel scope link src 192.0.2.2
unreachable 10.200.0.0/16
local 127.0.0.1 dev lo table local proto kernel scope host src 127.0.0.1
broadcast 127.255.255.255 dev lo table local proto kernel scope link src 127.0.0.1
unreachable fdcb:0:200::/48 dev lo metric 1024 pref medium
local ::1 dev lo table local proto kernel metric 0 pref medium
`
	var got []string
	for _, n := range parseRouteDests(out) {
		got = append(got, n.String())
	}
	want := "0.0.0.0/0 192.0.2.0/24 10.200.0.0/16 127.0.0.1/32 127.255.255.255/32 fdcb:0:200::/48 ::1/128"
	if strings.Join(got, " ") != want {
		t.Errorf("got %v, want %s", got, want)
	}
}

func TestClusterOfNetns(t *testing.T) {
	cases := map[string]string{
		"cnb-a-ctl":          "a",
		"cnb-a-node12":       "a",
		"cnb-my-lab-ext":     "my-lab",
		"cnb-my-lab-node1":   "my-lab",
		"cnb-a-node":         "",
		"cnb-a-other":        "",
		"cnbhs-test":         "",
		"cnb-default-node2x": "",
	}
	for ns, want := range cases {
		if got := clusterOfNetns(ns); got != want {
			t.Errorf("clusterOfNetns(%q) = %q, want %q", ns, got, want)
		}
	}
}

func TestExternalAddressesAndGateway(t *testing.T) {
	s := Spec{LocalConfig: lab.LocalConfig{Name: "x", Nodes: 3}, Index: 3, HasExternal: true}
	e, ok := s.External()
	if !ok || e.Direct != "10.203.0.200" || e.ViaGateway != "10.203.0.201" || e.Control != "10.203.0.200:25199" || e.GatewayNode != "node3" {
		t.Errorf("External() = %+v, %v", e, ok)
	}
	// The external addresses are on the underlay, outside every node's and the control plane's.
	for _, ip := range []string{e.Direct, e.ViaGateway} {
		if !s.Plan().Underlay().Contains(net.ParseIP(ip)) {
			t.Errorf("%s is not on the underlay", ip)
		}
	}
	one := Spec{LocalConfig: lab.LocalConfig{Name: "x", Nodes: 1}, HasExternal: true}
	if e, _ := one.External(); e.ViaGateway != "" || e.GatewayNode != "" {
		t.Errorf("a one-node cluster has no gateway, got %+v", e)
	}
	if _, ok := (Spec{LocalConfig: lab.LocalConfig{Name: "old", Nodes: 2}}).External(); ok {
		t.Error("a cluster created without the external host reports one")
	}
	if e.Direct6 != "" || e.ViaGateway6 != "" {
		t.Errorf("an IPv4 cluster's external host has IPv6 addresses: %+v", e)
	}
	// With IPv6, two more addresses in the lab's own /48, on the nodes' /64, never the host's.
	dual := Spec{LocalConfig: lab.LocalConfig{Name: "x", Nodes: 3, IPFamily: lab.DualStack}, Index: 3, HasExternal: true, External6: true}
	e, _ = dual.External()
	if e.Direct6 != "fdcb:0:203::200" || e.ViaGateway6 != "fdcb:0:203::201" || e.Direct != "10.203.0.200" {
		t.Errorf("dual-stack External() = %+v", e)
	}
	nodes := &net.IPNet{IP: dual.Plan().NodeIP6(1), Mask: net.CIDRMask(64, 128)}
	for _, ip := range []string{e.Direct6, e.ViaGateway6} {
		if a := net.ParseIP(ip); !nodes.Contains(a) || !dual.Plan().Block6().Contains(a) {
			t.Errorf("%s is not on the nodes' IPv6 underlay inside %s", ip, dual.Plan().Block6())
		}
	}
	// State written before the external host had IPv6 addresses offers none.
	dual.External6 = false
	if e, _ := dual.External(); e.Direct6 != "" {
		t.Errorf("an external host created without IPv6 addresses offers %s", e.Direct6)
	}
}

func TestEgressRuleset(t *testing.T) {
	got := egressRuleset([]string{"oifname \"eth0\" ip daddr 10.0.0.1 masquerade"})
	for _, want := range []string{"table inet cnb_egress {", "type nat hook postrouting priority srcnat;", "\t\toifname \"eth0\" ip daddr 10.0.0.1 masquerade\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("ruleset lacks %q:\n%s", want, got)
		}
	}
}

// Each node SNATs its pods' traffic to the external host, and routes the gateway address to
// the gateway node, which SNATs it: in each family the cluster has.
func TestNodeEgressInBothFamilies(t *testing.T) {
	s := Spec{LocalConfig: lab.LocalConfig{Name: "x", Nodes: 2, IPFamily: lab.DualStack}, Index: 3}
	rules, routes, sysctls := nodeEgress(s, 1, true)
	want := []string{
		`oifname "eth0" ip saddr 10.203.128.0/17 ip daddr 10.203.0.200 masquerade`,
		`oifname "eth0" ip6 saddr fdcb:0:203:100::/56 ip6 daddr fdcb:0:203::200 masquerade`,
	}
	if strings.Join(rules, "\n") != strings.Join(want, "\n") {
		t.Errorf("node1's rules:\n%s\nwant\n%s", strings.Join(rules, "\n"), strings.Join(want, "\n"))
	}
	wantRoutes := []string{"route add 10.203.0.201/32 via 10.203.0.12 dev eth0", "route add fdcb:0:203::201/128 via fdcb:0:203::12 dev eth0"}
	if strings.Join(routes, "\n") != strings.Join(wantRoutes, "\n") {
		t.Errorf("node1's routes: %q, want %q", routes, wantRoutes)
	}
	if sysctls["net.ipv6.conf.eth0.accept_redirects"] != "0" {
		t.Errorf("node1 accepts IPv6 redirects: %v", sysctls)
	}
	rules, routes, _ = nodeEgress(s, 2, true)
	if len(routes) != 0 || !slices.Contains(rules, `oifname "eth0" ip6 daddr fdcb:0:203::201 masquerade`) || !slices.Contains(rules, `oifname "eth0" ip daddr 10.203.0.201 masquerade`) {
		t.Errorf("the gateway node2: rules %q, routes %q", rules, routes)
	}
	// A datapath's own gateway takes the gateway address; IPv4 alone has no IPv6 rule.
	v4 := Spec{LocalConfig: lab.LocalConfig{Name: "x", Nodes: 2}, Index: 3}
	if rules, routes, sysctls := nodeEgress(v4, 1, false); len(rules) != 1 || len(routes) != 0 || sysctls["net.ipv6.conf.all.accept_redirects"] != "" {
		t.Errorf("IPv4 node with the datapath's gateway: rules %q, routes %q, sysctls %v", rules, routes, sysctls)
	}
}

// Options are checked as a suite's local block is (lab.LocalConfig), plus what only creating
// needs; each error names the setting, which the command line turns into its flag.
func TestValidateOptionsNamesTheSetting(t *testing.T) {
	base := Options{LocalConfig: lab.LocalConfig{Name: "a", Nodes: 2, Datapath: "bridge", ProxyMode: "nftables"}, Wait: 1}
	cases := []struct {
		mod  func(*Options)
		want string
	}{
		{func(o *Options) { o.Name = "UPPER" }, "cluster: "},
		{func(o *Options) { o.Name = "twelve-chars" }, "cluster: "},
		{func(o *Options) { o.Nodes = 0 }, "nodes: 0"},
		{func(o *Options) { o.Nodes = lab.MaxNodes + 1 }, "nodes: "},
		{func(o *Options) { o.Datapath = "weave" }, `datapath: "weave": expected one of bridge`},
		{func(o *Options) { o.ProxyMode = "ipvs" }, `proxyMode: "ipvs"`},
		{func(o *Options) { o.Wait = 0 }, "wait: "},
		{func(o *Options) { o.CRI, o.Runtimes = lab.CRICrio, []string{lab.RuntimeRunsc} }, `runtimes: "runsc": with CRI crio`},
	}
	for _, c := range cases {
		o := base
		c.mod(&o)
		var fe *setting.Error
		if _, err := o.validate(); err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &fe) {
			t.Errorf("want a *setting.Error containing %q, got %v", c.want, err)
		}
	}
	o := base
	if _, err := o.validate(); err != nil {
		t.Errorf("valid options refused: %v", err)
	}
	if o.Kubernetes != lab.DefaultKubernetesVersion || o.CRI != lab.CRIContainerd {
		t.Errorf("defaults not filled: %+v", o.LocalConfig)
	}
	// The root veth cnb-<name> must fit the kernel's 15-byte interface names.
	if s := (Spec{LocalConfig: lab.LocalConfig{Name: "abcdefghijk"}}); lab.CheckClusterName(s.Name) != nil || len(s.HostLink()) > 15 {
		t.Errorf("longest valid name gives link %q", s.HostLink())
	}
}

func TestUnescapeMount(t *testing.T) {
	if got := unescapeMount(`/var/lib/a\040b`); got != "/var/lib/a b" {
		t.Errorf("got %q", got)
	}
}

func TestInotifyInstancesCountsRealInstances(t *testing.T) {
	self := strconv.Itoa(os.Getpid())
	before := inotifyOf(self)
	fd, err := syscall.InotifyInit()
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if after := inotifyOf(self); after != before+1 {
		t.Errorf("one more inotify instance: counted %d, then %d", before, after)
	}
	if inotifyInstances(uint32(os.Getuid())) < 1 {
		t.Error("the instance just made is not counted for its user")
	}
}
