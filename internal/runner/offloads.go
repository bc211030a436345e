package runner

import (
	"context"
	"fmt"
	"strings"

	"github.com/cnibench/cnibench/internal/tuning"
)

// applyOffloads sets the profile's offloads on both ends of every pod's veth through the
// target's provider, which alone reaches the nodes' ends, and returns the node ends' features
// as fingerprint facts. The pods' own ends are in the fingerprint already
// (pod_generic_receive_offload...).
func (r *run) applyOffloads(ctx context.Context, tg *target, p tuning.Profile) (map[string]string, error) {
	if len(p.Offloads) == 0 {
		return nil, nil
	}
	o, ok := tg.provider.(offloader)
	if !ok { // the suite refuses tunings on remote targets
		return nil, fmt.Errorf("tuning %s: offloads are set on local clusters only", p.Name)
	}
	facts, err := o.SetOffloads(ctx, tg.client, tg.fixture, p)
	if err != nil {
		return nil, err
	}
	r.progress("target %s: offloads %s set and read back on both ends of every pod's veth", tg.name, strings.Join(p.OffloadArgs(), " "))
	return facts, nil
}
