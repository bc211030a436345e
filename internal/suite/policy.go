package suite

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/internal/setting"
)

// MaxExtraPolicies bounds networkPolicy.extra: enough for the scale the studies discuss, few
// enough that creating them stays a matter of seconds.
const MaxExtraPolicies = 10000

// NetworkPolicy is the policy state a target is measured under. The zero value is "none": no
// policy at all, the baseline the other variants are compared with.
type NetworkPolicy struct {
	// Allow adds an ingress policy that selects the server pods and allows the client pod on
	// the servers' ports, so every measured packet passes a policy verdict.
	Allow bool `json:"allow,omitempty"`
	// Extra adds this many unrelated policies, each selecting pods that do not exist, to
	// measure whether the number of policies in a cluster costs the datapath anything.
	Extra int `json:"extra,omitempty"`
}

// Any reports whether the variant creates any policy object.
func (p NetworkPolicy) Any() bool { return p.Allow || p.Extra > 0 }

// String is the variant's name as --network-policies spells it: none, allow, allow+100, none+100.
func (p NetworkPolicy) String() string {
	base := "none"
	if p.Allow {
		base = "allow"
	}
	if p.Extra > 0 {
		return base + "+" + strconv.Itoa(p.Extra)
	}
	return base
}

// ParseNetworkPolicy reads one variant: "none" or "allow", optionally followed by "+N" extra
// unrelated policies.
func ParseNetworkPolicy(s string) (NetworkPolicy, error) {
	base, extra, hasExtra := strings.Cut(strings.TrimSpace(s), "+")
	var p NetworkPolicy
	switch base {
	case "none":
	case "allow":
		p.Allow = true
	default:
		return p, fmt.Errorf("%q: expected none or allow, optionally with +N extra policies (e.g. allow+100)", s)
	}
	if hasExtra {
		n, err := strconv.Atoi(extra)
		if err != nil || n < 0 || n > MaxExtraPolicies {
			return p, fmt.Errorf("%q: expected +N with N from 0 to %d extra policies", s, MaxExtraPolicies)
		}
		p.Extra = n
	}
	return p, nil
}

// ParseNetworkPolicies reads a comma-separated list of variants, each at most once.
func ParseNetworkPolicies(list string) ([]NetworkPolicy, error) {
	var out []NetworkPolicy
	seen := map[NetworkPolicy]bool{}
	for _, s := range strings.Split(list, ",") {
		p, err := ParseNetworkPolicy(s)
		if err != nil {
			return nil, &setting.Error{Name: "networkPolicies", Err: err}
		}
		if seen[p] {
			return nil, &setting.Error{Name: "networkPolicies", Value: p.String(), Want: "listed twice"}
		}
		seen[p] = true
		out = append(out, p)
	}
	return out, nil
}

// withPolicyVariants replaces each target by one target per variant. Local targets get a
// cluster each, so the variants do not see each other's policies; a remote target can carry
// only one variant, since variants sharing a cluster would share its policies.
func withPolicyVariants(targets []Target, variants []NetworkPolicy) ([]Target, error) {
	var out []Target
	for _, t := range targets {
		if t.Local == nil && len(variants) > 1 {
			return nil, &setting.Error{Name: "networkPolicies", Want: fmt.Sprintf("target %s is a remote cluster, which can carry one variant per run (variants in one cluster would see each other's policies)", t.Name)}
		}
		for i, p := range variants {
			v := t
			v.NetworkPolicy = &p
			if len(variants) > 1 {
				v.Name = t.Name + "." + p.String()
				l := *t.Local
				l.Name = variantCluster(l.Name, i)
				v.Local = &l
			}
			out = append(out, v)
		}
	}
	return out, nil
}

// variantCluster names the local cluster of the i-th policy variant; cluster names are at most
// 11 characters, so the base is shortened to make room for the suffix.
func variantCluster(base string, i int) string {
	if base == "" {
		base = "default"
	}
	suffix := "-p" + strconv.Itoa(i)
	if max := 11 - len(suffix); len(base) > max {
		base = strings.TrimRight(base[:max], "-")
	}
	return base + suffix
}
