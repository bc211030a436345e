package local

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/tuning"
)

// vethEnd is one end of a pod's veth: inside the pod (netns "") or on its node.
type vethEnd struct {
	netns, dev string
}

// SetOffloads sets the profile's offloads on both ends of every pod's veth, inside the pod
// (its containers have CAP_NET_ADMIN there) and on its node (the node's namespace is the
// cluster's own), reads each back, and returns the node ends' features as fingerprint facts.
func (p *Provider) SetOffloads(ctx context.Context, client *kube.Client, fixture *kube.Fixture, prof tuning.Profile) (map[string]string, error) {
	spec, err := p.Layout.ReadSpec(p.spec.Name)
	if err != nil {
		return nil, fmt.Errorf("tuning %s: %w", prof.Name, err)
	}
	args := strings.Join(prof.OffloadArgs(), " ")
	var peer map[string]string
	for _, role := range []string{kube.RoleClient, kube.RoleServerA, kube.RoleServerB, kube.RoleLocal} {
		for _, pod := range fixture.Pods[role] {
			// Not fatal here: the read back names what did not take.
			out, err := client.Exec(ctx, pod.Namespace, pod.Name, pod.Spec.Containers[0].Name, []string{"sh", "-c",
				"ethtool -K eth0 " + args + " 2>&1; echo iflink $(cat /sys/class/net/eth0/iflink); ethtool -k eth0"})
			if err != nil {
				return nil, fmt.Errorf("tuning %s: offloads of pod %s: %w", prof.Name, pod.Name, err)
			}
			if err := checkOffloads(prof, string(out), "pod "+pod.Name+" eth0"); err != nil {
				return nil, err
			}
			end, err := nodeEnd(ctx, spec, pod, string(out))
			if err != nil {
				return nil, fmt.Errorf("tuning %s: %w", prof.Name, err)
			}
			if peer, err = setNodeOffloads(ctx, prof, end); err != nil {
				return nil, err
			}
		}
	}
	// Every end read back as the profile sets it; the facts are the last one's, all features.
	facts := map[string]string{}
	for _, feature := range tuning.OffloadNames() {
		facts["pod_peer_"+strings.ReplaceAll(feature, "-", "_")] = peer[feature]
	}
	return facts, nil
}

// nodeEnd finds the node's end of a pod's veth: the link whose index is the pod end's iflink,
// in the namespace of the pod's node.
func nodeEnd(ctx context.Context, spec cluster.Spec, pod *corev1.Pod, podOut string) (vethEnd, error) {
	var iflink string
	for _, line := range strings.Split(podOut, "\n") {
		if v, ok := strings.CutPrefix(line, "iflink "); ok {
			iflink = strings.TrimSpace(v)
		}
	}
	if _, err := strconv.Atoi(iflink); err != nil {
		return vethEnd{}, fmt.Errorf("pod %s: no iflink for eth0 in %q", pod.Name, podOut)
	}
	for i := 1; i <= spec.Nodes; i++ {
		if spec.NodeName(i) != pod.Spec.NodeName {
			continue
		}
		ns := spec.NodeNetns(i)
		out, err := exec.CommandContext(ctx, "ip", "-n", ns, "-o", "link", "show").Output()
		if err != nil {
			return vethEnd{}, fmt.Errorf("links of %s: %w", ns, err)
		}
		for _, line := range strings.Split(string(out), "\n") {
			// "17: vethab12@if2: <...>"
			idx, rest, _ := strings.Cut(line, ": ")
			if idx == iflink {
				name, _, _ := strings.Cut(rest, ":")
				name, _, _ = strings.Cut(name, "@")
				return vethEnd{ns, name}, nil
			}
		}
		return vethEnd{}, fmt.Errorf("pod %s: no link %s in %s", pod.Name, iflink, ns)
	}
	return vethEnd{}, fmt.Errorf("pod %s: node %s is not in cluster %s", pod.Name, pod.Spec.NodeName, spec.Name)
}

// setNodeOffloads sets and reads back the profile's offloads on the node's end of a veth,
// returning the features read.
func setNodeOffloads(ctx context.Context, p tuning.Profile, end vethEnd) (map[string]string, error) {
	set := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", end.netns, "ethtool", "-K", end.dev}, p.OffloadArgs()...)...)
	msg, _ := set.CombinedOutput() // the read back names what did not take
	out, err := exec.CommandContext(ctx, "ip", "netns", "exec", end.netns, "ethtool", "-k", end.dev).Output()
	if err != nil {
		return nil, fmt.Errorf("tuning %s: ethtool -k %s in %s: %w", p.Name, end.dev, end.netns, err)
	}
	where := fmt.Sprintf("%s %s", end.netns, end.dev)
	if err := checkOffloads(p, string(msg)+string(out), where); err != nil {
		return nil, err
	}
	return parseFeatures(string(out)), nil
}

// checkOffloads fails when `ethtool -k` output lacks one of the profile's offloads as set.
func checkOffloads(p tuning.Profile, out, where string) error {
	got := parseFeatures(out)
	for _, k := range tuning.SortedOffloads(p) {
		feature := tuning.OffloadNames()[k]
		if v := got[feature]; v != p.Offloads[k] {
			return fmt.Errorf("tuning %s: %s has %s %q, the profile sets %s (ethtool said: %s)",
				p.Name, where, feature, v, p.Offloads[k], strings.TrimSpace(firstLineOf(out)))
		}
	}
	return nil
}

// parseFeatures reads `ethtool -k` lines ("generic-receive-offload: on [fixed]") into feature
// and state; other lines are skipped.
func parseFeatures(out string) map[string]string {
	got := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ": ")
		if !ok {
			continue
		}
		if f := strings.Fields(rest); len(f) > 0 && (f[0] == "on" || f[0] == "off") {
			got[name] = f[0]
		}
	}
	return got
}

func firstLineOf(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
