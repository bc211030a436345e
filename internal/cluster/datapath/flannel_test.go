package datapath

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/lab"
)

func flannelTestCluster(t *testing.T) Cluster {
	t.Helper()
	root := t.TempDir()
	_, cidr, _ := net.ParseCIDR("10.230.128.0/17")
	c := Cluster{
		Name: "t", ClusterCIDR: cidr, Kubeconfig: filepath.Join(root, "kubeconfig"), StateDir: root, MTU: 1500,
		Bin: func(name string) string { return "/cache/bin/" + name },
	}
	for _, name := range []string{"node1", "node2"} {
		dir := filepath.Join(root, "nodes", name, "cni")
		c.Nodes = append(c.Nodes, Node{Name: name, Netns: "cnb-t-" + name, Uplink: "eth0",
			CNIConfDir: filepath.Join(dir, "net.d"), DataDir: dir})
	}
	return c
}

func TestFlannelRegistered(t *testing.T) {
	for name, backend := range map[string]string{"flannel-vxlan": "vxlan", "flannel-host-gw": "host-gw"} {
		dp, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if dp.Name() != name || !dp.AllocateNodeCIDRs() {
			t.Errorf("%s: name %q, allocate %v", name, dp.Name(), dp.AllocateNodeCIDRs())
		}
		if wb, ok := dp.(WithBinaries); !ok || !slices.Equal(wb.Binaries(), []string{"flanneld", "flannel"}) {
			t.Errorf("%s: binaries not declared", name)
		}
		if _, ok := dp.(WithDaemons); !ok {
			t.Errorf("%s runs no daemons", name)
		}
		fp, ok := dp.(WithFingerprint)
		if !ok {
			t.Fatalf("%s has no fingerprint", name)
		}
		if got := fp.Fingerprint(); got["cni"] != "flannel" || got["cni_mode"] != backend || got["cni_version"] != "v0.28.10" {
			t.Errorf("%s fingerprint %v", name, got)
		}
	}
}

func TestFlannelSetupWritesConfigInsideTheCluster(t *testing.T) {
	c := flannelTestCluster(t)
	if err := os.MkdirAll(filepath.Dir(FlannelSubnetFile(c.Nodes[0])), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(FlannelSubnetFile(c.Nodes[0]), []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := (Flannel{Backend: FlannelHostGW}).Setup(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	var netConf struct {
		Network string
		Backend struct{ Type string }
	}
	data, err := os.ReadFile(filepath.Join(c.StateDir, "flannel", "net-conf.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &netConf); err != nil {
		t.Fatal(err)
	}
	if netConf.Network != "10.230.128.0/17" || netConf.Backend.Type != "host-gw" {
		t.Errorf("net-conf.json: %s", data)
	}
	if _, err := os.Stat(FlannelSubnetFile(c.Nodes[0])); err == nil {
		t.Error("a stale subnet file survived Setup; readiness would be wrong")
	}
	for _, n := range c.Nodes {
		raw, err := os.ReadFile(filepath.Join(n.CNIConfDir, "10-cnb-flannel.conflist"))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"/run/flannel", "/var/lib/cni"} {
			if strings.Contains(string(raw), p) {
				t.Errorf("%s conflist mentions %s:\n%s", n.Name, p, raw)
			}
		}
		var conf struct {
			CNIVersion string `json:"cniVersion"`
			Name       string
			Plugins    []map[string]any
		}
		if err := json.Unmarshal(raw, &conf); err != nil {
			t.Fatal(err)
		}
		if conf.CNIVersion != "0.4.0" || conf.Name != "cnb-flannel-"+n.Name || len(conf.Plugins) != 2 {
			t.Fatalf("%s conflist: %s", n.Name, raw)
		}
		fl := conf.Plugins[0]
		if fl["type"] != "flannel" || fl["subnetFile"] != FlannelSubnetFile(n) ||
			!strings.HasPrefix(fl["dataDir"].(string), n.DataDir+"/") {
			t.Errorf("%s flannel plugin: %v", n.Name, fl)
		}
		if ipam := fl["ipam"].(map[string]any); !strings.HasPrefix(ipam["dataDir"].(string), n.DataDir+"/") {
			t.Errorf("%s host-local dataDir %v", n.Name, ipam["dataDir"])
		}
		delegate := fl["delegate"].(map[string]any)
		if _, ok := delegate["ipam"]; ok {
			t.Errorf("%s delegate has an ipam block, which the plugin refuses", n.Name)
		}
		if delegate["ipMasq"] != false || delegate["isDefaultGateway"] != true {
			t.Errorf("%s delegate %v", n.Name, delegate)
		}
		if conf.Plugins[1]["type"] != "portmap" {
			t.Errorf("%s second plugin %v", n.Name, conf.Plugins[1])
		}
	}
}

func TestFlannelSetupRefusesUnknownBackend(t *testing.T) {
	if err := (Flannel{Backend: "udp"}).Setup(context.Background(), flannelTestCluster(t)); err == nil {
		t.Error("Setup accepted backend udp")
	}
}

func TestFlannelDaemons(t *testing.T) {
	c := flannelTestCluster(t)
	ds, err := Flannel{Backend: FlannelVXLAN}.Daemons(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 2 {
		t.Fatalf("%d daemons", len(ds))
	}
	for i, d := range ds {
		n := c.Nodes[i]
		if d.Name != n.Name+"-flanneld" || d.Node != i+1 {
			t.Errorf("daemon %d: %s on node %d", i, d.Name, d.Node)
		}
		argv := strings.Join(d.Argv, " ")
		for _, want := range []string{
			"/cache/bin/flanneld --kube-subnet-mgr", "--kubeconfig-file=" + c.Kubeconfig, "--iface=eth0",
			"--subnet-file=" + FlannelSubnetFile(n), "--net-config-path=" + filepath.Join(c.StateDir, "flannel", "net-conf.json"),
			"/cache/bin/kubectl", "--ip-masq",
		} {
			if !strings.Contains(argv, want) {
				t.Errorf("%s argv lacks %q: %s", d.Name, want, argv)
			}
		}
		if !slices.Contains(d.Env, "NODE_NAME="+n.Name) {
			t.Errorf("%s env %v", d.Name, d.Env)
		}
		if d.Ready() {
			t.Errorf("%s ready before its subnet file exists", d.Name)
		}
		if err := os.MkdirAll(filepath.Dir(FlannelSubnetFile(n)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(FlannelSubnetFile(n), []byte("FLANNEL_MTU=1450\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if !d.Ready() {
			t.Errorf("%s not ready with its subnet file", d.Name)
		}
	}
}

func TestFlannelNetConfOfEachFamily(t *testing.T) {
	_, v6, _ := net.ParseCIDR("fdcb:0:230:100::/56")
	for family, want := range map[string]string{
		lab.IPv4:      `{"Backend":{"Type":"vxlan"},"Network":"10.230.128.0/17"}`,
		lab.DualStack: `{"Backend":{"Type":"vxlan"},"EnableIPv4":true,"EnableIPv6":true,"IPv6Network":"fdcb:0:230:100::/56","Network":"10.230.128.0/17"}`,
		lab.IPv6:      `{"Backend":{"Type":"vxlan"},"EnableIPv4":false,"EnableIPv6":true,"IPv6Network":"fdcb:0:230:100::/56","Network":"10.230.128.0/17"}`,
	} {
		c := flannelTestCluster(t)
		c.Family = family
		if family != lab.IPv4 {
			c.ClusterCIDR6 = v6
		}
		if err := (Flannel{Backend: FlannelVXLAN}).Setup(context.Background(), c); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(c.StateDir, "flannel", "net-conf.json"))
		if err != nil {
			t.Fatal(err)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, data); err != nil || compact.String() != want {
			t.Errorf("%s: net-conf.json %s, want %s (%v)", family, compact.String(), want, err)
		}
	}
}
