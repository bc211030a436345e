package datapath

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/cnibench/cnibench/internal/cluster/binaries"
	"github.com/cnibench/cnibench/internal/lab"
)

// Flannel backends this kernel supports (no udp: it needs a cgo build; the cloud backends
// need a cloud).
const (
	FlannelVXLAN  = "vxlan"
	FlannelHostGW = "host-gw"
)

// Flannel runs flanneld on every node, as a flannel cluster does: the controller-manager
// allocates each Node's pod CIDR, flanneld (Kubernetes subnet manager) publishes it with its
// backend data in Node annotations and installs the forwarding to every other node (a vxlan
// device and its neighbours, or plain routes for host-gw), and the flannel CNI plugin hands
// pods to the bridge plugin with the subnet flanneld wrote. Every file flanneld or the plugin
// writes is under the cluster's state directory; flanneld runs in the node's namespace, so
// its device, routes and iptables rules live and die with the node.
type Flannel struct {
	// Backend is flanneld's backend type: FlannelVXLAN or FlannelHostGW.
	Backend string
}

// Name implements Datapath.
func (f Flannel) Name() string { return "flannel-" + f.Backend }

// AllocateNodeCIDRs implements Datapath: flanneld's Kubernetes subnet manager takes each
// node's subnet from Node.spec.podCIDR, which the controller-manager assigns.
func (Flannel) AllocateNodeCIDRs() bool { return true }

// Binaries implements WithBinaries.
func (Flannel) Binaries() []string {
	return []string{binaries.FlanneldBinary, binaries.FlannelCNIBinary}
}

// Fingerprint implements WithFingerprint.
func (f Flannel) Fingerprint() map[string]string {
	return map[string]string{"cni": "flannel", "cni_version": binaries.FlannelVersion, "cni_mode": f.Backend}
}

// flannelDir holds a node's flannel files: flanneld's subnet file and the CNI plugin's
// record of each pod's delegate configuration (which it needs again on DEL).
func flannelDir(n Node) string { return filepath.Join(n.DataDir, "flannel") }

// FlannelSubnetFile is where node n's flanneld writes its subnet.env (the node's subnet,
// the cluster network, the MTU) and where the CNI plugin reads it.
func FlannelSubnetFile(n Node) string { return filepath.Join(flannelDir(n), "subnet.env") }

// flannelNetConf is the net-conf.json every flanneld of the cluster reads.
func flannelNetConf(c Cluster) string { return filepath.Join(c.StateDir, "flannel", "net-conf.json") }

// Setup writes the cluster's net-conf.json and each node's CNI configuration.
func (f Flannel) Setup(_ context.Context, c Cluster) error {
	if err := f.setupFlanneld(c); err != nil {
		return err
	}
	for _, n := range c.Nodes {
		if err := writeConflist(n, "10-cnb-flannel.conflist", flannelConflist(n)); err != nil {
			return err
		}
	}
	return nil
}

// setupFlanneld writes what every flanneld of the cluster reads: net-conf.json, and each node's
// directory without a subnet file from an earlier start.
func (f Flannel) setupFlanneld(c Cluster) error {
	if f.Backend != FlannelVXLAN && f.Backend != FlannelHostGW {
		return fmt.Errorf("flannel backend %q: expected %s or %s", f.Backend, FlannelVXLAN, FlannelHostGW)
	}
	if c.ClusterCIDR == nil {
		return errors.New("flannel: the cluster has no cluster CIDR")
	}
	conf := map[string]any{
		"Network": c.ClusterCIDR.String(),
		"Backend": map[string]any{"Type": f.Backend},
	}
	if c.ClusterCIDR6 != nil {
		// flanneld then takes each node's IPv6 pod CIDR too, and (vxlan) tunnels IPv6 between
		// the nodes' IPv6 addresses on a device of its own, flannel-v6.1.
		conf["EnableIPv6"], conf["IPv6Network"] = true, c.ClusterCIDR6.String()
		conf["EnableIPv4"] = c.Family != lab.IPv6
	}
	netConf, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return fmt.Errorf("encode flannel net-conf.json: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(flannelNetConf(c)), 0o755); err != nil {
		return fmt.Errorf("create flannel config dir: %w", err)
	}
	if err := os.WriteFile(flannelNetConf(c), netConf, 0o644); err != nil {
		return fmt.Errorf("write flannel net-conf.json: %w", err)
	}
	for _, n := range c.Nodes {
		if err := os.MkdirAll(flannelDir(n), 0o755); err != nil {
			return fmt.Errorf("create flannel dir of %s: %w", n.Name, err)
		}
		// Readiness is the subnet file's existence, so none may predate this flanneld.
		if err := os.Remove(FlannelSubnetFile(n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove stale subnet file of %s: %w", n.Name, err)
		}
	}
	return nil
}

// flannelConflist is node n's CNI configuration: the flannel plugin delegating to bridge,
// then portmap for hostPort. Without explicit paths the plugin would read /run/flannel and
// write /var/lib/cni/flannel, shared by every node of every cluster.
func flannelConflist(n Node) map[string]any {
	return map[string]any{
		// The plugin (CNI library v0.8) speaks spec versions up to 0.4.0.
		"cniVersion": "0.4.0",
		// Per node, like the bridge datapath's: host-local keys its state by network name.
		"name": "cnb-flannel-" + n.Name,
		"plugins": []any{
			map[string]any{
				"type":       "flannel",
				"subnetFile": FlannelSubnetFile(n),
				"dataDir":    filepath.Join(flannelDir(n), "delegates"),
				// The plugin refuses an ipam block inside the delegate but merges this one into
				// it (adding the subnet and the route to the cluster network), so host-local's
				// allocations stay in the node's directory.
				"ipam": map[string]any{"type": "host-local", "dataDir": filepath.Join(n.DataDir, "ipam")},
				"delegate": map[string]any{
					"bridge": "cnb0",
					// What kube-flannel's own configuration asks for: a default route (Service
					// IPs are outside the cluster network) and hairpin for a pod reaching itself
					// through a Service.
					"isDefaultGateway": true,
					"hairpinMode":      true,
					// flanneld masquerades (--ip-masq); the bridge must not do it a second time.
					"ipMasq": false,
				},
			},
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
		},
	}
}

// waitNodeThenExec runs before flanneld: flanneld exits when its Node has no pod CIDR yet
// (the controller-manager assigns it shortly after the kubelet registers the Node), and
// panics on a Node with no annotations at all, so it starts only once the Node has both.
// kubectl's cache goes to the cluster's directory instead of $HOME/.kube.
// Arguments: kubectl, kubeconfig, cache dir, node name, then flanneld's command line.
const waitNodeThenExec = `kubectl=$1 kubeconfig=$2 cache=$3 node=$4; shift 4
until case "$("$kubectl" --kubeconfig="$kubeconfig" --cache-dir="$cache" get node "$node" \
	-o 'jsonpath={.spec.podCIDR}|{.metadata.annotations}' 2>/dev/null)" in ?*'|'?*) true ;; *) false ;; esac
do sleep 0.5; done
exec "$@"`

// Daemons implements WithDaemons: one flanneld per node, ready when it has written its
// subnet file (it does so after taking its lease and setting up its backend).
func (f Flannel) Daemons(c Cluster) ([]Daemon, error) {
	if c.Bin == nil {
		return nil, errors.New("flannel: the cluster gives no binary paths")
	}
	var out []Daemon
	for i, n := range c.Nodes {
		subnetFile := FlannelSubnetFile(n)
		argv := []string{"sh", "-c", waitNodeThenExec, "cnb-flanneld-wait",
			c.Bin("kubectl"), c.Kubeconfig, filepath.Join(c.StateDir, "flannel", "kubectl-cache"), n.Name,
			c.Bin(binaries.FlanneldBinary),
			"--kube-subnet-mgr",
			"--kubeconfig-file=" + c.Kubeconfig,
			"--iface=" + n.Uplink,
			"--subnet-file=" + subnetFile,
			"--net-config-path=" + flannelNetConf(c),
			// As kube-flannel's manifest runs it, so the datapath measured is the one users run:
			// traffic from pods to addresses outside the cluster network leaves with the node's
			// address; pod-to-pod and Service traffic keeps pod addresses.
			"--ip-masq",
		}
		out = append(out, Daemon{
			Name: n.Name + "-flanneld",
			Node: i + 1,
			Argv: argv,
			// The Kubernetes subnet manager finds its Node by NODE_NAME (otherwise through its
			// own pod, which a host process has not). An empty NOTIFY_SOCKET keeps its
			// sd_notify from reaching a systemd that may have started cnibench.
			Env: []string{"NODE_NAME=" + n.Name, "NOTIFY_SOCKET="},
			Ready: func() bool {
				_, err := os.Stat(subnetFile)
				return err == nil
			},
		})
	}
	return out, nil
}
