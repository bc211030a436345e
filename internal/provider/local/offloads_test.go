package local

import (
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/tuning"
)

func TestCheckOffloadsReadsEthtool(t *testing.T) {
	out := `Actual changes:
tcp-segmentation-offload: off
Features for eth0:
rx-checksumming: on
tcp-segmentation-offload: off
	tx-tcp-segmentation: off
generic-segmentation-offload: off
generic-receive-offload: on
rx-vlan-filter: off [fixed]
`
	p, _ := tuning.Load("no-offloads")
	if err := checkOffloads(p, out, "pod x eth0"); err != nil {
		t.Errorf("no-offloads as set: %v", err)
	}
	gro, _ := tuning.Load("veth-gro")
	if err := checkOffloads(gro, out, "pod x eth0"); err != nil {
		t.Errorf("veth-gro as set: %v", err)
	}
	fixed := "Cannot change generic-receive-offload\nFeatures for eth0:\ngeneric-receive-offload: off [fixed]\n"
	err := checkOffloads(gro, fixed, "cnb-a-node1 veth1")
	if err == nil || !strings.Contains(err.Error(), `tuning veth-gro: cnb-a-node1 veth1 has generic-receive-offload "off", the profile sets on (ethtool said: Cannot change generic-receive-offload)`) {
		t.Errorf("a feature that did not take: %v", err)
	}
	if got := parseFeatures(out); got["rx-vlan-filter"] != "off" || got["tx-checksumming"] != "" || len(got) != 6 {
		t.Errorf("parseFeatures = %v", got)
	}
}
