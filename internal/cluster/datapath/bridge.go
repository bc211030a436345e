package datapath

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cnibench/cnibench/internal/cluster/binaries"
)

// Bridge is the simplest datapath: a Linux bridge per node with host-local IPAM, and plain
// routes to every other node's pod subnet over the underlay (what flannel calls host-gw).
type Bridge struct{}

// Name implements Datapath.
func (Bridge) Name() string { return "bridge" }

// AllocateNodeCIDRs implements Datapath: the plan fixes each node's subnet.
func (Bridge) AllocateNodeCIDRs() bool { return false }

// Fingerprint implements WithFingerprint.
func (Bridge) Fingerprint() map[string]string {
	return map[string]string{"cni": "bridge", "cni_version": "containernetworking/plugins " + binaries.CNIPluginsVersion, "cni_mode": "bridge + host-local, host-gw routes"}
}

// Setup writes each node's conflist and installs the inter-node routes.
func (Bridge) Setup(ctx context.Context, c Cluster) error {
	for _, n := range c.Nodes {
		if err := writeBridgeConf(n, c); err != nil {
			return err
		}
		for _, peer := range c.Nodes {
			if peer.Name == n.Name {
				continue
			}
			if err := ipIn(ctx, n.Netns, "route", "replace", peer.PodCIDR.String(), "via", peer.IP.String(), "dev", n.Uplink); err != nil {
				return fmt.Errorf("route to %s pods on %s: %w", peer.Name, n.Name, err)
			}
			if peer.PodCIDR6 == nil {
				continue
			}
			if err := ipIn(ctx, n.Netns, "-6", "route", "replace", peer.PodCIDR6.String(), "via", peer.IP6.String(), "dev", n.Uplink); err != nil {
				return fmt.Errorf("route to %s IPv6 pods on %s: %w", peer.Name, n.Name, err)
			}
		}
	}
	return nil
}

// writeBridgeConf writes node n's bridge configuration; the pods' interfaces and the bridge
// get the underlay's MTU, which nothing encapsulates, and an address of each of the cluster's
// families.
func writeBridgeConf(n Node, c Cluster) error {
	conf := map[string]any{
		"cniVersion": "1.0.0",
		// The network name is per node because host-local keys its state by it; a shared name
		// would make nodes share allocations if dataDir were ever left at its default.
		"name": "cnb-" + n.Name,
		"plugins": []any{
			map[string]any{
				"type":        "bridge",
				"bridge":      "cnb0",
				"isGateway":   true,
				"ipMasq":      false,
				"hairpinMode": true,
				"mtu":         c.MTU,
				"ipam": map[string]any{
					"type":    "host-local",
					"dataDir": filepath.Join(n.DataDir, "ipam"),
					"ranges":  c.podRanges(n),
					"routes":  c.defaultRoutes(),
				},
			},
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
		},
	}
	return writeConflist(n, "10-cnb-bridge.conflist", conf)
}

// writeConflist writes a CNI configuration list atomically, so the runtime never reads half.
func writeConflist(n Node, file string, conf map[string]any) error {
	data, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return fmt.Errorf("encode CNI config of %s: %w", n.Name, err)
	}
	if err := os.MkdirAll(n.CNIConfDir, 0o755); err != nil {
		return fmt.Errorf("create CNI config dir of %s: %w", n.Name, err)
	}
	tmp := filepath.Join(n.CNIConfDir, "."+file+".tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("write CNI config of %s: %w", n.Name, err)
	}
	if err := os.Rename(tmp, filepath.Join(n.CNIConfDir, file)); err != nil {
		return fmt.Errorf("write CNI config of %s: %w", n.Name, err)
	}
	return nil
}
