package datapath

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/cluster/binaries"
	"github.com/cnibench/cnibench/internal/lab"
)

func testCiliumCluster(t *testing.T) Cluster {
	t.Helper()
	state := t.TempDir()
	_, cidr, _ := net.ParseCIDR("10.250.128.0/17")
	_, pod1, _ := net.ParseCIDR("10.250.129.0/24")
	return Cluster{
		Name: "t", ClusterCIDR: cidr, StateDir: state, MTU: 1500,
		Kubeconfig: filepath.Join(state, "admin.kubeconfig"),
		Bin:        func(n string) string { return "/cache/bin/" + n },
		Nodes: []Node{{Name: "node1", Netns: "cnb-t-node1", Uplink: "eth0", IP: net.IPv4(10, 250, 0, 11), PodCIDR: pod1,
			CNIConfDir: filepath.Join(state, "nodes", "node1", "cni", "net.d")}},
	}
}

func TestCiliumRegistered(t *testing.T) {
	for name, native := range map[string]bool{"cilium-vxlan": false, "cilium-native": true} {
		d, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		c, ok := d.(Cilium)
		if !ok || c.Native != native || c.Name() != name {
			t.Errorf("%s: %#v", name, d)
		}
		if _, ok := d.(WithDaemons); !ok {
			t.Errorf("%s runs no daemons", name)
		}
		if _, ok := d.(WithFingerprint); !ok {
			t.Errorf("%s has no fingerprint", name)
		}
		if _, ok := d.(WithBinaries); !ok {
			t.Errorf("%s declares no binaries", name)
		}
	}
	if got := (Cilium{Native: true}).Fingerprint()["cni_mode"]; got != "native" {
		t.Errorf("native fingerprint mode %q", got)
	}
	fp := Cilium{}.Fingerprint()
	if fp["cni"] != "cilium" || fp["cni_version"] != "1.19.7" || fp["cni_mode"] != "tunnel vxlan" {
		t.Errorf("fingerprint %v", fp)
	}
}

// TestCiliumAgentArgv checks the flags that keep the agent off the host and select the mode,
// and that every path the agent writes is below the cluster's state directory.
func TestCiliumAgentArgv(t *testing.T) {
	c := testCiliumCluster(t)
	n := c.Nodes[0]
	for _, native := range []bool{false, true} {
		argv := Cilium{Native: native}.agentArgv(c, n, ciliumNodePaths(c, n))
		if argv[0] != "/cache/bin/cilium-agent" {
			t.Errorf("binary %s", argv[0])
		}
		for _, want := range []string{"--kube-proxy-replacement=false", "--bpf-lb-sock=false", "--ipam=kubernetes",
			"--enable-gops=false", "--devices=eth0", "--k8s-kubeconfig-path=" + c.Kubeconfig} {
			if !slices.Contains(argv, want) {
				t.Errorf("native=%v: missing %s in %v", native, want, argv)
			}
		}
		for _, a := range argv[1:] {
			flag, val, ok := strings.Cut(a, "=")
			if !ok || !strings.HasPrefix(val, "/") || flag == "--k8s-kubeconfig-path" {
				continue
			}
			if !strings.HasPrefix(val, c.StateDir+"/") {
				t.Errorf("%s points outside the cluster state: %s", flag, val)
			}
		}
		mode := []string{"--routing-mode=tunnel", "--tunnel-protocol=vxlan"}
		if native {
			mode = []string{"--routing-mode=native", "--ipv4-native-routing-cidr=10.250.128.0/17", "--auto-direct-node-routes=true"}
		}
		for _, want := range mode {
			if !slices.Contains(argv, want) {
				t.Errorf("native=%v: missing %s", native, want)
			}
		}
	}
}

// TestCiliumFamilies checks the agent's flags per cluster family: each family's pods, pod
// CIDRs and masquerading, the tunnel's underlay, native routing's IPv6 range, and the pod
// CIDRs a node gets.
func TestCiliumFamilies(t *testing.T) {
	_, cidr6, _ := net.ParseCIDR("fdcb:0:250:100::/56")
	_, pod6, _ := net.ParseCIDR("fdcb:0:250:101::/64")
	for family, want := range map[string][]string{
		lab.IPv4:      {"--enable-ipv4=true", "--enable-ipv6=false", "--k8s-require-ipv6-pod-cidr=false", "--underlay-protocol=ipv4"},
		lab.DualStack: {"--enable-ipv4=true", "--enable-ipv6=true", "--enable-ipv6-masquerade=true", "--k8s-require-ipv6-pod-cidr=true", "--underlay-protocol=ipv4", "--ipv6-native-routing-cidr=" + cidr6.String()},
		lab.IPv6:      {"--enable-ipv4=false", "--k8s-require-ipv4-pod-cidr=false", "--enable-ipv4-masquerade=false", "--enable-ipv6=true", "--underlay-protocol=ipv6"},
	} {
		c := testCiliumCluster(t)
		c.Family = family
		if family != lab.IPv4 {
			c.ClusterCIDR6, c.Nodes[0].PodCIDR6 = cidr6, pod6
		}
		n := c.Nodes[0]
		argv := Cilium{Native: true}.agentArgv(c, n, ciliumNodePaths(c, n))
		for _, w := range want {
			if !slices.Contains(argv, w) {
				t.Errorf("%s: missing %s in %v", family, w, argv)
			}
		}
		if family == lab.IPv4 && slices.ContainsFunc(argv, func(a string) bool { return strings.HasPrefix(a, "--ipv6-native-routing-cidr") }) {
			t.Errorf("ipv4: an IPv6 native routing range in %v", argv)
		}
		cidrs := map[string][]string{lab.IPv4: {"10.250.129.0/24"}, lab.DualStack: {"10.250.129.0/24", pod6.String()}, lab.IPv6: {pod6.String()}}[family]
		if got := c.podCIDRs(n); !slices.Equal(got, cidrs) {
			t.Errorf("%s: node pod CIDRs %v, want %v", family, got, cidrs)
		}
	}
}

// TestCiliumSetup runs Setup against a fake source archive and checks the CNI config.
func TestCiliumSetup(t *testing.T) {
	for _, tool := range []string{ciliumClang, ciliumLLC} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s here", tool)
		}
	}
	c := testCiliumCluster(t)
	bin := t.TempDir()
	c.Bin = func(n string) string { return filepath.Join(bin, n) }
	writeTarGz(t, filepath.Join(bin, binaries.CiliumBPFArchive), "bpf_lxc.c", "int x;")
	if err := (Cilium{}).Setup(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(c.StateDir, "cilium", "lib", "bpf", "bpf_lxc.c")); err != nil {
		t.Errorf("sources not unpacked: %v", err)
	}
	data, err := os.ReadFile(filepath.Join(c.Nodes[0].CNIConfDir, "05-cilium.conflist"))
	if err != nil {
		t.Fatal(err)
	}
	var conf struct {
		Plugins []map[string]any `json:"plugins"`
	}
	if err := json.Unmarshal(data, &conf); err != nil {
		t.Fatal(err)
	}
	// The agents call clang and llc: the versioned ones, through links of the cluster's own.
	for name, tool := range map[string]string{"clang": ciliumClang, "llc": ciliumLLC} {
		target, err := os.Readlink(filepath.Join(ciliumToolchainDir(c), name))
		if err != nil || filepath.Base(target) != tool {
			t.Errorf("toolchain %s -> %q (%v), want %s", name, target, err, tool)
		}
	}
	p := ciliumNodePaths(c, c.Nodes[0])
	if len(conf.Plugins) != 1 || conf.Plugins[0]["type"] != "cilium-cni" || conf.Plugins[0]["log-file"] != p.cniLog {
		t.Errorf("conflist %s", data)
	}
	if !strings.HasPrefix(p.socket, c.StateDir+"/") || len(p.socket) > 100 {
		t.Errorf("socket %s must be under the state and short enough for sun_path", p.socket)
	}
}

func writeTarGz(t *testing.T, path, name, body string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write([]byte(body)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []interface{ Close() error }{tw, zw, f} {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLinkRuntimeRunDirRefusesHostRun points the node runtime's pid file at this test process,
// whose /run is the host's: the link must be refused rather than created on the host.
func TestLinkRuntimeRunDirRefusesHostRun(t *testing.T) {
	c := testCiliumCluster(t)
	n := c.Nodes[0]
	if err := os.MkdirAll(filepath.Join(c.StateDir, "run"), 0o755); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(c.StateDir, "run", n.Name+"-containerd.pid")
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		t.Fatal(err)
	}
	err := linkRuntimeRunDir(c, n, filepath.Join(c.StateDir, "cilium", "node1", "run"))
	if err == nil || !strings.Contains(err.Error(), "no private /run") {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Lstat("/run/cilium"); err == nil {
		t.Log("/run/cilium exists on this host (not created by this test)")
	}
}

// TestCiliumKPR checks the deployment people run: kube-proxy replacement with the socket load
// balancer, BPF masquerading and host routing, native routing, no kube-proxy, and a
// fingerprint that says all of it.
func TestCiliumKPR(t *testing.T) {
	d, err := Lookup("cilium-kpr")
	if err != nil {
		t.Fatal(err)
	}
	c := testCiliumCluster(t)
	n := c.Nodes[0]
	argv := d.(Cilium).agentArgv(c, n, ciliumNodePaths(c, n))
	for _, want := range []string{"--kube-proxy-replacement=true", "--bpf-lb-sock=true", "--enable-bpf-masquerade=true",
		"--enable-host-legacy-routing=false", "--routing-mode=native", "--cgroup-root=" + ciliumNodePaths(c, n).cgroup} {
		if !slices.Contains(argv, want) {
			t.Errorf("missing %s in %v", want, argv)
		}
	}
	for _, a := range argv {
		if a == "--kube-proxy-replacement=false" || a == "--routing-mode=tunnel" {
			t.Errorf("kpr agent has %s", a)
		}
	}
	fp := d.(WithFingerprint).Fingerprint()
	want := map[string]string{"cilium_kube_proxy_replacement": "true", "cilium_socket_lb": "true", "cilium_masquerade": "bpf",
		"cilium_host_routing": "bpf", "cilium_tunnel_protocol": "vxlan (egress gateway traffic only)", "egress_gateway_impl": "CiliumEgressGatewayPolicy"}
	for k, v := range want {
		if fp[k] != v {
			t.Errorf("fingerprint %s = %q, want %q", k, fp[k], v)
		}
	}
	if fp := (Cilium{}).Fingerprint(); fp["cilium_kube_proxy_replacement"] != "false" || fp["cilium_masquerade"] != "iptables" || fp["cilium_tunnel_protocol"] != "vxlan" {
		t.Errorf("vxlan fingerprint %v", fp)
	}
	if lab.DefaultProxyMode("cilium-kpr") != lab.ProxyNone || lab.DefaultProxyMode("cilium-native") != "nftables" {
		t.Errorf("default proxy modes %s, %s", lab.DefaultProxyMode("cilium-kpr"), lab.DefaultProxyMode("cilium-native"))
	}
}

func TestCiliumEgressGatewayOnlyWithKPR(t *testing.T) {
	g := EgressGateway{Destinations: []string{"10.0.0.201/32"}, Label: "cnibench.dev/egress-gateway", EgressIP: "10.0.0.12", Interface: "eth0"}
	if p := (Cilium{}).EgressGatewayPolicy(g); p != "" {
		t.Errorf("cilium-vxlan has an egress gateway policy:\n%s", p)
	}
	kpr := Cilium{KPR: true}
	p := kpr.EgressGatewayPolicy(g)
	for _, want := range []string{"kind: CiliumEgressGatewayPolicy", `destinationCIDRs: ["10.0.0.201/32"]`, `matchLabels: {"cnibench.dev/egress-gateway": "true"}`, `egressIP: "10.0.0.12"`} {
		if !strings.Contains(p, want) {
			t.Errorf("policy lacks %q:\n%s", want, p)
		}
	}
	// Cilium reads an egressIP as IPv4 only: with an IPv6 destination the policy names the
	// interface, whose addresses of both families the gateway SNATs to.
	g.Destinations = append(g.Destinations, "fdcb:0:200::201/128")
	p = kpr.EgressGatewayPolicy(g)
	for _, want := range []string{`destinationCIDRs: ["10.0.0.201/32", "fdcb:0:200::201/128"]`, `interface: "eth0"`} {
		if !strings.Contains(p, want) {
			t.Errorf("dual-stack policy lacks %q:\n%s", want, p)
		}
	}
	if strings.Contains(p, "egressIP") {
		t.Errorf("dual-stack policy names an egressIP, which Cilium takes for IPv4 alone:\n%s", p)
	}
	if !slices.Contains(kpr.serviceArgs(), "--enable-egress-gateway=true") || slices.Contains(Cilium{}.serviceArgs(), "--enable-egress-gateway=true") {
		t.Error("the agent enables the egress gateway exactly with kube-proxy replacement")
	}
	c := Cluster{Bin: func(n string) string { return n }}
	if !slices.Contains(kpr.operatorArgv(c), "--enable-egress-gateway=true") || slices.Contains(Cilium{}.operatorArgv(c), "--enable-egress-gateway=true") {
		t.Error("the operator registers the policy CRD exactly with kube-proxy replacement")
	}
}
