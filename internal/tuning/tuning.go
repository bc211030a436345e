// Package tuning is the kernel tuning a run compares: named profiles of TCP settings that
// live in each network namespace, applied to a local cluster's pods through the pods' own
// sysctls (the kubelet has the runtime write them in the pod's namespace, never the host's),
// and of offloads on the pods' veths, read back from inside the pods and their nodes.
package tuning

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/cnibench/cnibench/internal/yamlerr"
)

// Default is the profile that changes nothing: the kernel's own values.
const Default = "default"

// Profile is a named set of sysctls applied to a run's pods.
type Profile struct {
	// Name names the profile in target names ("local.throughput"), so it is a DNS label.
	Name string `json:"name"`
	// Description says what the profile is for.
	Description string `json:"description,omitempty"`
	// Sysctls maps a sysctl (dotted, net.ipv4.tcp_rmem) to its value as the kernel prints it,
	// fields separated by blanks.
	Sysctls map[string]string `json:"sysctls,omitempty"`
	// Offloads maps an offload of OffloadNames (gro, gso, tso) to on or off, set on both ends
	// of every pod's veth: inside the pod, and on the node. The devices the nodes share
	// (bridge, uplink, tunnel) keep theirs, since a cluster's profiles share its nodes.
	Offloads map[string]string `json:"offloads,omitempty"`
}

// OffloadNames maps the offloads a profile may set, by their `ethtool -K` names, to the
// features `ethtool -k` reports them as.
func OffloadNames() map[string]string {
	return map[string]string{
		"gro": "generic-receive-offload",
		"gso": "generic-segmentation-offload",
		"tso": "tcp-segmentation-offload",
	}
}

// SortedOffloads returns the names of the profile's offloads, sorted.
func SortedOffloads(p Profile) []string { return slices.Sorted(maps.Keys(p.Offloads)) }

// OffloadArgs are the profile's offloads as `ethtool -K DEV` takes them, sorted by name.
func (p Profile) OffloadArgs() []string {
	var out []string
	for _, k := range SortedOffloads(p) {
		out = append(out, k, p.Offloads[k])
	}
	return out
}

// Builtin lists the profiles that come with the tool.
func Builtin() []Profile {
	return []Profile{
		{Name: Default, Description: "the kernel's own values"},
		{Name: "throughput", Description: "TCP autotuning may grow both socket buffers to 64 MiB (the kernel's default stops the send buffer at 4 MiB)",
			Sysctls: map[string]string{"net.ipv4.tcp_rmem": "4096 131072 67108864", "net.ipv4.tcp_wmem": "4096 131072 67108864"}},
		{Name: "latency", Description: "no autocorking, a 16 KiB limit on unsent data, no slow start after idle",
			Sysctls: map[string]string{"net.ipv4.tcp_autocorking": "0", "net.ipv4.tcp_notsent_lowat": "16384", "net.ipv4.tcp_slow_start_after_idle": "0"}},
		{Name: "no-offloads", Description: "no segmentation offload (TSO, GSO) on the pods' veths: every segment crosses the stack at the MTU's size, as through a NIC without them",
			Offloads: map[string]string{"gso": "off", "tso": "off"}},
		{Name: "veth-gro", Description: "GRO on both ends of the pods' veths (off by default): the receiving end then coalesces segments in NAPI",
			Offloads: map[string]string{"gro": "on"}},
	}
}

// Allowed lists the sysctls a profile may set: TCP settings each network namespace has for
// itself (checked on Linux 6.18: writing them in a namespace leaves the host's values), so a
// pod's setting cannot reach the host.
func Allowed() []string {
	return []string{
		"net.core.somaxconn",
		"net.ipv4.tcp_autocorking",
		"net.ipv4.tcp_congestion_control",
		"net.ipv4.tcp_max_syn_backlog",
		"net.ipv4.tcp_mtu_probing",
		"net.ipv4.tcp_no_metrics_save",
		"net.ipv4.tcp_notsent_lowat",
		"net.ipv4.tcp_rmem",
		"net.ipv4.tcp_sack",
		"net.ipv4.tcp_slow_start_after_idle",
		"net.ipv4.tcp_timestamps",
		"net.ipv4.tcp_window_scaling",
		"net.ipv4.tcp_wmem",
	}
}

// safe are the Allowed sysctls Kubernetes calls safe: every kubelet accepts them and Pod
// Security's baseline level admits them. The others need the kubelet's allowedUnsafeSysctls
// and a privileged namespace.
func safe() []string { return []string{"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"} }

// Unsafe returns the names among sysctls that Kubernetes does not call safe, sorted: Pod
// Security's baseline level refuses them and a kubelet needs them in allowedUnsafeSysctls.
func Unsafe(sysctls map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(sysctls)) {
		if !slices.Contains(safe(), k) {
			out = append(out, k)
		}
	}
	return out
}

// UnsafeAllowed is Allowed less the safe ones: what a local cluster's kubelets allow.
func UnsafeAllowed() []string {
	return slices.DeleteFunc(Allowed(), func(k string) bool { return slices.Contains(safe(), k) })
}

// Keys returns the profile's sysctls, sorted.
func (p Profile) Keys() []string { return slices.Sorted(maps.Keys(p.Sysctls)) }

// Normalize writes a sysctl value as the profile compares it: fields joined by one blank
// (the kernel prints tcp_rmem's with tabs).
func Normalize(v string) string { return strings.Join(strings.Fields(v), " ") }

// Load returns the builtin profile of that name, or reads a YAML profile from a path (a
// reference holding a slash or ending in .yaml or .yml).
func Load(ref string) (Profile, error) {
	if !isPath(ref) {
		for _, p := range Builtin() {
			if p.Name == ref {
				return p, nil
			}
		}
		return Profile{}, fmt.Errorf("tuning %q: expected a profile file (a path) or one of %s", ref, strings.Join(names(), ", "))
	}
	data, err := os.ReadFile(ref)
	if err != nil {
		return Profile{}, fmt.Errorf("tuning %s: %w", ref, err)
	}
	p, err := Parse(data)
	if err != nil {
		return Profile{}, fmt.Errorf("tuning %s: %w", ref, err)
	}
	return p, nil
}

// Parse reads a profile from YAML and validates it.
func Parse(data []byte) (Profile, error) {
	var p Profile
	if err := yaml.UnmarshalStrict(bytes.TrimSpace(data), &p); err != nil {
		// A document that is one value, not fields, has no field to name.
		var whole *json.UnmarshalTypeError
		if errors.As(err, &whole) && whole.Field == "" {
			return Profile{}, fmt.Errorf("top level: expected a profile's fields (name, sysctls, offloads), got a %s", whole.Value)
		}
		return Profile{}, yamlerr.Locate(bytes.TrimSpace(data), err)
	}
	// YAML reads an unquoted on and off as booleans.
	for k, v := range p.Offloads {
		switch v {
		case "true":
			p.Offloads[k] = "on"
		case "false":
			p.Offloads[k] = "off"
		}
	}
	return p, p.Validate()
}

// Validate checks the name and that every sysctl is Allowed with a value.
func (p Profile) Validate() error {
	if !labelName(p.Name) {
		return fmt.Errorf("name: %q: expected a name of lower-case letters, digits and '-' (it becomes part of target names)", p.Name)
	}
	for _, k := range p.Keys() {
		if !slices.Contains(Allowed(), k) {
			return fmt.Errorf("sysctls: %s: expected one of the TCP settings each network namespace has for itself: %s", k, strings.Join(Allowed(), ", "))
		}
		if Normalize(p.Sysctls[k]) == "" {
			return fmt.Errorf("sysctls: %s: expected a value", k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(p.Offloads)) {
		if _, ok := OffloadNames()[k]; !ok {
			return fmt.Errorf("offloads: %s: expected one of %s", k, strings.Join(slices.Sorted(maps.Keys(OffloadNames())), ", "))
		}
		if v := p.Offloads[k]; v != "on" && v != "off" {
			return fmt.Errorf("offloads: %s: %q: expected on or off", k, v)
		}
	}
	return nil
}

func isPath(ref string) bool {
	return strings.Contains(ref, "/") || strings.HasSuffix(ref, ".yaml") || strings.HasSuffix(ref, ".yml")
}

func names() []string {
	var out []string
	for _, p := range Builtin() {
		out = append(out, p.Name)
	}
	return out
}

// labelName reports whether s is a lower-case name of letters, digits and inner '-', at most
// 20 characters (it ends namespace names).
func labelName(s string) bool {
	if s == "" || len(s) > 20 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}
