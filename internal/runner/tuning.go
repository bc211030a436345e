package runner

import (
	"context"
	"fmt"
	"strings"

	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/suite"
	"github.com/cnibench/cnibench/internal/tuning"
)

// variantSuffix names what sets a target apart from the others on its cluster, for its
// namespace: its variant of each dimension ("runsc-throughput-ipv6"), then the Gateway API
// implementation it names (two targets may share a cluster through two); "" for none. A
// RuntimeClass name may hold dots, a namespace name may not.
func variantSuffix(t suite.Target) string {
	parts := t.VariantNames()
	if t.Gateway != "" {
		parts = append(parts, t.Gateway)
	}
	return strings.ReplaceAll(strings.Join(parts, "-"), ".", "-")
}

// tuningProfile loads the target's tuning profile: the zero Profile without one.
func tuningProfile(t suite.Target) (tuning.Profile, error) {
	if t.Tuning == "" {
		return tuning.Profile{}, nil
	}
	p, err := tuning.Load(t.Tuning)
	if err != nil {
		return tuning.Profile{}, fmt.Errorf("target %s: %w", t.Name, err)
	}
	return p, nil
}

// checkTuning reads the profile's sysctls back inside the first client and server pods and
// fails on any value the pod does not have: a figure labelled "throughput" must have run
// with its buffers. The profile's name goes into the fingerprint; the values read are there
// already (Client.Fingerprint).
func (r *run) checkTuning(ctx context.Context, tg *target, p tuning.Profile) error {
	if p.Name == "" {
		return nil
	}
	tg.fingerprint["tuning"] = p.Name
	for _, role := range []string{kube.RoleClient, kube.RoleServerB, kube.RoleServerA, kube.RoleLocal} {
		pod := tg.fixture.Pod(role, 0)
		if pod == nil {
			continue
		}
		got, err := tg.client.PodSysctls(ctx, pod)
		if err != nil {
			return fmt.Errorf("tuning %s: %w", p.Name, err)
		}
		for _, k := range p.Keys() {
			if want := tuning.Normalize(p.Sysctls[k]); got[k] != want {
				return fmt.Errorf("tuning %s: pod %s has %s = %q, the profile sets %q", p.Name, pod.Name, k, got[k], want)
			}
		}
	}
	r.progress("target %s: tuning %s read back in its pods: %s", tg.name, p.Name, describeSysctls(p))
	return nil
}

// describeSysctls lists a profile's settings for a progress line.
func describeSysctls(p tuning.Profile) string {
	if len(p.Sysctls) == 0 {
		return "the kernel's own sysctls"
	}
	var out []string
	for _, k := range p.Keys() {
		out = append(out, k+"="+tuning.Normalize(p.Sysctls[k]))
	}
	return strings.Join(out, ", ")
}
