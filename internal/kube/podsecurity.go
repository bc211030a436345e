package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/cnibench/cnibench/internal/tuning"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Pod Security admission's namespace labels (k8s.io/pod-security-admission/api), and the
// level host-network pods need.
const (
	LabelPodSecurityEnforce = "pod-security.kubernetes.io/enforce"
	LabelPodSecurityWarn    = "pod-security.kubernetes.io/warn"
	LabelPodSecurityAudit   = "pod-security.kubernetes.io/audit"
	PodSecurityPrivileged   = "privileged"
)

// hostRoles are the roles whose pods share their node's network namespace, which Pod
// Security's baseline and restricted levels refuse.
var hostRoles = []string{RoleHostClient, RoleHostServer}

// NeedsHostNetwork reports whether the fixture has pods on the host network.
func (s FixtureSpec) NeedsHostNetwork() bool {
	for _, r := range s.Roles {
		if slices.Contains(hostRoles, r) {
			return true
		}
	}
	return false
}

// needsPrivileged reports whether the fixture's pods need Pod Security's privileged level:
// host-network pods (the node probe's included), sysctls its baseline level refuses, or
// CAP_NET_ADMIN.
func (s FixtureSpec) needsPrivileged() bool {
	return s.NeedsHostNetwork() || s.NodeProbe || len(tuning.Unsafe(s.Sysctls)) > 0 || s.NetAdmin
}

// namespaceLabels are the labels of a namespace a run creates: its own, and Pod Security's
// privileged level at all three modes when its pods need the host network, unsafe sysctls or
// CAP_NET_ADMIN (warn and audit too, or a cluster whose default warns would print a warning
// per pod).
func (s FixtureSpec) namespaceLabels() map[string]string {
	labels := map[string]string{LabelManagedBy: managedBy, LabelRun: s.RunID}
	if s.needsPrivileged() {
		for _, k := range []string{LabelPodSecurityEnforce, LabelPodSecurityWarn, LabelPodSecurityAudit} {
			labels[k] = PodSecurityPrivileged
		}
	}
	return labels
}

// CheckPodSecurity asks the API server, by a dry-run create of the run's first host-network
// pod, whether a namespace the run did not create admits it; nothing is created. A refusal
// names the label that would admit the pods and the paths that need it, before anything is
// deployed. Fixtures without host-network pods pass at once.
func (c *Client) CheckPodSecurity(ctx context.Context, spec FixtureSpec, paths []string) error {
	if spec.NeedsHostNetwork() {
		role := RoleHostClient
		if !slices.Contains(spec.Roles, role) {
			role = RoleHostServer
		}
		what := fmt.Sprintf("host-network pods, which paths %s need", strings.Join(paths, ", "))
		if err := c.dryRun(ctx, spec, spec.pod(role, 0), what); err != nil {
			return err
		}
	}
	var asks []string
	if unsafe := tuning.Unsafe(spec.Sysctls); len(unsafe) > 0 {
		asks = append(asks, fmt.Sprintf("the sysctls %s, which the tuning sets and Kubernetes does not call safe", strings.Join(unsafe, ", ")))
	}
	if spec.NetAdmin {
		asks = append(asks, "CAP_NET_ADMIN, with which the tuning sets offloads on the pods' interfaces")
	}
	if len(asks) > 0 {
		return c.dryRun(ctx, spec, spec.pod(RoleClient, 0), "pods with "+strings.Join(asks, " and "))
	}
	return nil
}

// CheckNodeProbe asks the API server, by a dry-run create, whether the namespace admits the
// node probe's host-network pod on node; nothing is created.
func (c *Client) CheckNodeProbe(ctx context.Context, spec FixtureSpec, node string) error {
	return c.dryRun(ctx, spec, spec.probePod(nodeProbe{prefix: "node_a", node: node}), "the node probe's host-network pods")
}

// dryRun creates pod in dry-run mode: a Pod Security refusal becomes a PodSecurityError.
func (c *Client) dryRun(ctx context.Context, spec FixtureSpec, pod *corev1.Pod, what string) error {
	_, err := c.CS.CoreV1().Pods(spec.Namespace).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err == nil {
		return nil
	}
	if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "PodSecurity") {
		return &PodSecurityError{Namespace: spec.Namespace, What: what, Reason: err.Error()}
	}
	return fmt.Errorf("check that namespace %s admits %s (a dry run): %w", spec.Namespace, what, err)
}

// PodSecurityError is a namespace whose Pod Security level refuses the run's host-network
// pods, or its pods' unsafe sysctls.
type PodSecurityError struct {
	Namespace string
	What      string // the pods refused and what asks for them
	Reason    string // the API server's refusal
}

func (e *PodSecurityError) Error() string {
	return fmt.Sprintf("namespace %s does not admit %s (%s); label it %s=%s "+
		"(kubectl label namespace %s %s=%s), change the suite, or leave --namespace out so that the run creates and labels a namespace of its own",
		e.Namespace, e.What, e.Reason, LabelPodSecurityEnforce, PodSecurityPrivileged,
		e.Namespace, LabelPodSecurityEnforce, PodSecurityPrivileged)
}
