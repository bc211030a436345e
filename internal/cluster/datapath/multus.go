package datapath

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/cnibench/cnibench/internal/cluster/binaries"
	"github.com/cnibench/cnibench/internal/lab"
)

// multusConflist is the file a node's runtime reads under Multus: it sorts before every
// datapath's (05-cilium, 10-cnb-*), and the runtime takes the first.
const multusConflist = "00-cnb-multus.conflist"

// multusDir holds a node's Multus files: the datapath's own configuration (its cluster
// network), the secondary network's, Multus' cache of each pod's delegates (which it needs
// again on DEL) and its log.
func multusDir(n Node) string { return filepath.Join(n.DataDir, "multus") }

// MultusLog is node n's Multus log.
func MultusLog(n Node) string { return filepath.Join(multusDir(n), "multus.log") }

// secondaryName is the secondary network's name: the NetworkAttachmentDefinition's, which has
// no config of its own, so that Multus reads it from the node's file of that name.
func secondaryName() string {
	_, name, _ := strings.Cut(lab.SecondaryNetwork, "/")
	return name
}

// SetupMultus puts Multus in front of the datapath on every node, once the datapath's Setup
// has written its configuration: the datapath's conflist moves out of the runtime's directory
// and becomes Multus' cluster network, which every pod gets as its eth0, and each node gets
// the secondary network's configuration, which pods that name it get as net1.
func SetupMultus(c Cluster) error {
	if c.Bin == nil || c.Kubeconfig == "" {
		return fmt.Errorf("multus: the cluster gives no binary paths or kubeconfig")
	}
	for _, n := range c.Nodes {
		delegate, err := takeDatapathConflist(n)
		if err != nil {
			return fmt.Errorf("multus on %s: %w", n.Name, err)
		}
		if err := os.MkdirAll(filepath.Join(multusDir(n), "net.d"), 0o755); err != nil {
			return fmt.Errorf("multus on %s: %w", n.Name, err)
		}
		conf := multusConf(c, n, delegate)
		if err := writeConflist(n, multusConflist, conf); err != nil {
			return err
		}
		secondary, err := json.MarshalIndent(secondaryConf(c, n), "", "  ")
		if err != nil {
			return fmt.Errorf("encode the secondary network of %s: %w", n.Name, err)
		}
		if err := os.WriteFile(filepath.Join(multusDir(n), "net.d", secondaryName()+".conf"), secondary, 0o644); err != nil {
			return fmt.Errorf("multus on %s: %w", n.Name, err)
		}
	}
	return nil
}

// takeDatapathConflist reads the one conflist the datapath wrote into the node's runtime
// directory and moves it to the node's Multus directory, so that the runtime sees Multus only.
func takeDatapathConflist(n Node) (map[string]any, error) {
	files, err := filepath.Glob(filepath.Join(n.CNIConfDir, "*.conflist"))
	if err != nil {
		return nil, err
	}
	var own []string
	for _, f := range files {
		if filepath.Base(f) != multusConflist {
			own = append(own, f)
		}
	}
	if len(own) != 1 {
		return nil, fmt.Errorf("expected the datapath's one conflist in %s, found %d", n.CNIConfDir, len(own))
	}
	data, err := os.ReadFile(own[0])
	if err != nil {
		return nil, err
	}
	var conf map[string]any
	if err := json.Unmarshal(data, &conf); err != nil {
		return nil, fmt.Errorf("read %s: %w", own[0], err)
	}
	if err := os.MkdirAll(multusDir(n), 0o755); err != nil {
		return nil, err
	}
	if err := os.Rename(own[0], filepath.Join(multusDir(n), filepath.Base(own[0]))); err != nil {
		return nil, err
	}
	return conf, nil
}

// multusConf is node n's Multus configuration, the thin plugin's, with the datapath's conflist
// as its only delegate and every path the node's own.
func multusConf(c Cluster, n Node, delegate map[string]any) map[string]any {
	version, _ := delegate["cniVersion"].(string)
	return map[string]any{
		// The delegate's own version: Multus hands its result up unconverted.
		"cniVersion": version,
		"name":       "cnb-multus",
		"plugins": []any{map[string]any{
			"type":       binaries.MultusBinary,
			"kubeconfig": c.Kubeconfig,
			"delegates":  []any{delegate},
			// The datapath's plugins and macvlan are in the cache's bin dir with Multus.
			"binDir":   filepath.Dir(c.Bin(binaries.MultusBinary)),
			"confDir":  filepath.Join(multusDir(n), "net.d"),
			"cniDir":   filepath.Join(multusDir(n), "cache"),
			"logFile":  MultusLog(n),
			"logLevel": "error",
			// Pods of kube-system (CoreDNS) get the cluster network only, whatever they ask.
			"systemNamespaces": []string{"kube-system"},
			"multusNamespace":  "kube-system",
			"capabilities":     map[string]bool{"portMappings": true},
		}},
	}
}

// secondaryConf is node n's configuration of the secondary network: a macvlan interface in
// bridge mode over the node's uplink (pods of one node reach each other through it, pods of
// others across the underlay), addressed by host-local from the node's own range of the
// cluster's secondary block, so that two nodes never hand out one address.
func secondaryConf(c Cluster, n Node) map[string]any {
	return map[string]any{
		"cniVersion": "0.4.0",
		"name":       secondaryName(),
		"type":       "macvlan",
		"master":     n.Uplink,
		"mode":       "bridge",
		"mtu":        c.MTU,
		"ipam": map[string]any{
			"type":    "host-local",
			"dataDir": filepath.Join(multusDir(n), "ipam"),
			"ranges":  []any{[]map[string]string{{"subnet": c.Secondary.String(), "rangeStart": firstHost(n.Secondary), "rangeEnd": lastHost(n.Secondary)}}},
		},
	}
}

// firstHost and lastHost bound the addresses of an IPv4 /24 that host-local may hand out.
func firstHost(n *net.IPNet) string { return offset(n, 1) }
func lastHost(n *net.IPNet) string  { return offset(n, 254) }

// offset is the address i past n's network address (IPv4, within its last byte).
func offset(n *net.IPNet, i byte) string {
	ip := append(net.IP(nil), n.IP.To4()...)
	ip[3] += i
	return ip.String()
}
