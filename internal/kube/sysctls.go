package kube

import (
	"context"
	"fmt"
	"strings"

	"github.com/cnibench/cnibench/internal/tuning"
	corev1 "k8s.io/api/core/v1"
)

// PodSysctls reads, inside a pod's first container, the tuning sysctls (tuning.Allowed) as
// its network namespace has them, values normalized; one this kernel lacks is left out.
func (c *Client) PodSysctls(ctx context.Context, pod *corev1.Pod) (map[string]string, error) {
	script := sysctlScript(tuning.Allowed(), "")
	out, err := c.Exec(ctx, pod.Namespace, pod.Name, pod.Spec.Containers[0].Name, []string{"sh", "-c", script + "true"})
	if err != nil {
		return nil, fmt.Errorf("read the sysctls of pod %s: %w", pod.Name, err)
	}
	got := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if name, value, ok := strings.Cut(line, " "); ok {
			got[name] = tuning.Normalize(value)
		}
	}
	return got, nil
}

// sysctlFacts records the tuning sysctls of a pod under prefix ("pod_sysctl_net.ipv4.tcp_rmem").
func (c *Client) sysctlFacts(ctx context.Context, pod *corev1.Pod, prefix string, fp map[string]string) {
	got, err := c.PodSysctls(ctx, pod)
	if err != nil {
		return
	}
	for k, v := range got {
		fp[prefix+"_sysctl_"+k] = v
	}
}
