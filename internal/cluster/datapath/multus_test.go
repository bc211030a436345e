package datapath

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// multusTestCluster is flannelTestCluster with the secondary block and each node's share.
func multusTestCluster(t *testing.T) Cluster {
	t.Helper()
	c := flannelTestCluster(t)
	_, c.Secondary, _ = net.ParseCIDR("10.230.64.0/18")
	for i := range c.Nodes {
		_, c.Nodes[i].Secondary, _ = net.ParseCIDR("10.230.6" + string(rune('5'+i)) + ".0/24")
	}
	return c
}

func readJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return out
}

// TestSetupMultusDelegatesToTheDatapath: the runtime's directory holds Multus alone, whose one
// delegate is the datapath's conflist as the datapath wrote it, and every path Multus writes is
// the node's own.
func TestSetupMultusDelegatesToTheDatapath(t *testing.T) {
	c := multusTestCluster(t)
	if err := (Flannel{Backend: FlannelVXLAN}).Setup(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	n := c.Nodes[0]
	own := readJSON(t, filepath.Join(n.CNIConfDir, "10-cnb-flannel.conflist"))
	if err := SetupMultus(c); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(n.CNIConfDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != multusConflist {
		t.Fatalf("the runtime's directory holds %v, want %s alone", entries, multusConflist)
	}
	conf := readJSON(t, filepath.Join(n.CNIConfDir, multusConflist))
	if conf["cniVersion"] != own["cniVersion"] {
		t.Errorf("Multus speaks %v, its delegate %v", conf["cniVersion"], own["cniVersion"])
	}
	plugin := conf["plugins"].([]any)[0].(map[string]any)
	if plugin["type"] != "multus" || plugin["kubeconfig"] != c.Kubeconfig || plugin["binDir"] != "/cache/bin" {
		t.Errorf("Multus plugin %v", plugin)
	}
	delegates := plugin["delegates"].([]any)
	if len(delegates) != 1 || delegates[0].(map[string]any)["name"] != own["name"] {
		t.Errorf("delegates %v, want the datapath's %v", delegates, own["name"])
	}
	for _, key := range []string{"confDir", "cniDir", "logFile"} {
		if p, _ := plugin[key].(string); !strings.HasPrefix(p, n.DataDir+"/") {
			t.Errorf("%s = %q, outside the node's directory %s", key, p, n.DataDir)
		}
	}
	if _, err := os.Stat(filepath.Join(multusDir(n), "10-cnb-flannel.conflist")); err != nil {
		t.Errorf("the datapath's conflist was not kept beside Multus': %v", err)
	}
}

// TestSecondaryNetworkPerNode: each node's macvlan rides its own uplink and hands out addresses
// of its own share only, all in one subnet, so pods of two nodes are on one link and never
// share an address.
func TestSecondaryNetworkPerNode(t *testing.T) {
	c := multusTestCluster(t)
	if err := (Flannel{Backend: FlannelVXLAN}).Setup(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if err := SetupMultus(c); err != nil {
		t.Fatal(err)
	}
	starts := map[string]bool{}
	for _, n := range c.Nodes {
		conf := readJSON(t, filepath.Join(multusDir(n), "net.d", "cnb-secondary.conf"))
		if conf["name"] != "cnb-secondary" || conf["type"] != "macvlan" || conf["mode"] != "bridge" || conf["master"] != n.Uplink {
			t.Errorf("%s: secondary network %v", n.Name, conf)
		}
		ipam := conf["ipam"].(map[string]any)
		r := ipam["ranges"].([]any)[0].([]any)[0].(map[string]any)
		if r["subnet"] != "10.230.64.0/18" || !n.Secondary.Contains(net.ParseIP(r["rangeStart"].(string))) || !n.Secondary.Contains(net.ParseIP(r["rangeEnd"].(string))) {
			t.Errorf("%s: range %v, want within %s of 10.230.64.0/18", n.Name, r, n.Secondary)
		}
		if d, _ := ipam["dataDir"].(string); !strings.HasPrefix(d, n.DataDir+"/") {
			t.Errorf("%s: host-local keeps its state in %q", n.Name, d)
		}
		starts[r["rangeStart"].(string)] = true
	}
	if len(starts) != len(c.Nodes) {
		t.Errorf("nodes share a range: %v", starts)
	}
}

// TestSetupMultusNeedsTheDatapathsConflist: without one (a datapath not set up), or with two,
// there is nothing unambiguous to delegate to.
func TestSetupMultusNeedsTheDatapathsConflist(t *testing.T) {
	c := multusTestCluster(t)
	if err := SetupMultus(c); err == nil || !strings.Contains(err.Error(), "found 0") {
		t.Errorf("no conflist: %v", err)
	}
}
