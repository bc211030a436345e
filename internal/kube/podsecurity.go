package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"

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

// namespaceLabels are the labels of a namespace a run creates: its own, and Pod Security's
// privileged level at all three modes when its pods need the host network (warn and audit
// too, or a cluster whose default warns would print a warning per pod).
func (s FixtureSpec) namespaceLabels() map[string]string {
	labels := map[string]string{LabelManagedBy: managedBy, LabelRun: s.RunID}
	if s.NeedsHostNetwork() {
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
	if !spec.NeedsHostNetwork() {
		return nil
	}
	role := RoleHostClient
	if !slices.Contains(spec.Roles, role) {
		role = RoleHostServer
	}
	pod := spec.pod(role, 0)
	_, err := c.CS.CoreV1().Pods(spec.Namespace).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err == nil {
		return nil
	}
	if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "PodSecurity") {
		return &PodSecurityError{Namespace: spec.Namespace, Paths: paths, Reason: err.Error()}
	}
	return fmt.Errorf("check that namespace %s admits host-network pods (a dry run): %w", spec.Namespace, err)
}

// PodSecurityError is a namespace whose Pod Security level refuses the run's host-network
// pods.
type PodSecurityError struct {
	Namespace string
	Paths     []string // the suite's paths that need the host network
	Reason    string   // the API server's refusal
}

func (e *PodSecurityError) Error() string {
	return fmt.Sprintf("namespace %s does not admit host-network pods, which paths %s need (%s); label it %s=%s "+
		"(kubectl label namespace %s %s=%s), drop those paths, or leave --namespace out so that the run creates and labels a namespace of its own",
		e.Namespace, strings.Join(e.Paths, ", "), e.Reason, LabelPodSecurityEnforce, PodSecurityPrivileged,
		e.Namespace, LabelPodSecurityEnforce, PodSecurityPrivileged)
}
