package datapath

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/lab"
)

func TestBridgeConfOfEachFamily(t *testing.T) {
	_, p4, _ := net.ParseCIDR("10.230.129.0/24")
	_, p6, _ := net.ParseCIDR("fdcb:0:230:101::/64")
	n := Node{Name: "node1", PodCIDR: p4, Gateway: net.ParseIP("10.230.129.1"), PodCIDR6: p6, Gateway6: net.ParseIP("fdcb:0:230:101::1")}
	for family, want := range map[string]string{
		lab.IPv4:      `"ranges":[[{"gateway":"10.230.129.1","subnet":"10.230.129.0/24"}]],"routes":[{"dst":"0.0.0.0/0"}]`,
		lab.DualStack: `"ranges":[[{"gateway":"10.230.129.1","subnet":"10.230.129.0/24"}],[{"gateway":"fdcb:0:230:101::1","subnet":"fdcb:0:230:101::/64"}]],"routes":[{"dst":"0.0.0.0/0"},{"dst":"::/0"}]`,
		lab.IPv6:      `"ranges":[[{"gateway":"fdcb:0:230:101::1","subnet":"fdcb:0:230:101::/64"}]],"routes":[{"dst":"::/0"}]`,
	} {
		dir := t.TempDir()
		n.CNIConfDir, n.DataDir = dir, dir
		node, c := n, Cluster{Family: family, MTU: 1500}
		if family == lab.IPv4 {
			node.PodCIDR6, node.Gateway6 = nil, nil
		} else {
			_, c.ClusterCIDR6, _ = net.ParseCIDR("fdcb:0:230:100::/56")
		}
		if err := writeBridgeConf(node, c); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(dir, "10-cnb-bridge.conflist"))
		if err != nil {
			t.Fatal(err)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, data); err != nil || !strings.Contains(compact.String(), want) {
			t.Errorf("%s: conflist %s, want %s (%v)", family, compact.String(), want, err)
		}
	}
}
