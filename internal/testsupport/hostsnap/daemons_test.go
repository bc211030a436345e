package hostsnap

import (
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/cluster/binaries"
)

// notDaemons are the built binaries that never outlive the command that runs them (CNI plugins
// and IPAM, called once per pod; clients and CLIs) or are no program at all: a leak check needs
// no name for them.
var notDaemons = map[string]bool{
	"bridge": true, "ptp": true, "macvlan": true, "loopback": true, "host-local": true,
	"bandwidth": true, "portmap": true, "firewall": true, "tuning": true,
	"ctr": true, "kubectl": true, "flannel": true, "cilium-cni": true, "cilium-dbg": true,
	"calico": true, "calico-ipam": true, "multus": true,
}

// TestDaemonNamesCoverEveryBuiltBinary fails when a component gains a binary that the host
// snapshot would not recognise as cnibench's if it survived a delete: each is a daemon name, or
// listed above as one that never runs for long.
func TestDaemonNamesCoverEveryBuiltBinary(t *testing.T) {
	daemons := daemonNames()
	for _, c := range binaries.Components() {
		for _, b := range c.Binaries {
			if strings.Contains(b, ".") || notDaemons[b] { // data files: CRDs, BPF sources
				continue
			}
			if !daemons[b] && !daemons[b[:min(len(b), commLen)]] {
				t.Errorf("component %s builds %s, which is neither a daemon name of the host snapshot nor listed as short-lived", c.Name, b)
			}
		}
	}
}
