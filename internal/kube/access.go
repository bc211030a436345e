package kube

import (
	"context"
	"fmt"
	"strings"

	authv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Access says what a run does in a cluster, so that preflight checks exactly the permissions
// `cnibench rbac` grants: one table, two uses.
type Access struct {
	// Namespace is the run's namespace. With OwnNamespace the run creates and deletes it (a
	// name of its own per run, so the rules cannot name it); otherwise it exists and the run
	// only adds and removes its own labelled objects there.
	Namespace    string
	OwnNamespace bool
	// Policies adds the NetworkPolicy permissions of a policy variant.
	Policies bool
	// SecondaryNetwork is the NetworkAttachmentDefinition (namespace/name) the secondary paths
	// take, which the preflight reads; "" when none.
	SecondaryNetwork string
}

// RBACName names the roles and bindings `cnibench rbac` prints.
const RBACName = "cnibench-run"

// Rules returns the permissions a run needs: in its namespace, and cluster-wide (read-only,
// plus the run's namespace itself when it makes its own).
func (a Access) Rules() (namespaced, cluster []rbacv1.PolicyRule) {
	namespaced = []rbacv1.PolicyRule{
		// Client and server pods, the probe pod, their startup (watched), the probe label on a
		// server (patch), the probe's output (log), the tools run in them (exec), teardown.
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create", "get", "list", "watch", "patch", "delete", "deletecollection"}},
		{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}},
		// The pairs' ClusterIP Services and the probe Service, whose endpoints are watched.
		{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"create", "get", "list", "delete"}},
		{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
	}
	if a.Policies {
		namespaced = append(namespaced, rbacv1.PolicyRule{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"networkpolicies"}, Verbs: []string{"create", "deletecollection"}})
	}
	cluster = []rbacv1.PolicyRule{
		// Placement, the fingerprint and the pods' memory from the kubelets' summaries.
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{""}, Resources: []string{"nodes/proxy"}, Verbs: []string{"get"}},
		{APIGroups: []string{"node.k8s.io"}, Resources: []string{"runtimeclasses"}, Verbs: []string{"list"}},
		// The fingerprint: which CNI and kube-proxy run (their DaemonSets) and their modes (the
		// ConfigMaps named here, in whatever namespace the CNI lives).
		{APIGroups: []string{"apps"}, Resources: []string{"daemonsets"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}, ResourceNames: []string{"kube-proxy", "cilium-config", "kube-flannel-cfg"}},
	}
	if a.OwnNamespace {
		cluster = append(cluster, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"create", "get", "delete"}})
	}
	if a.SecondaryNetwork != "" {
		// The one NetworkAttachmentDefinition, read by the preflight: in the run's namespace,
		// or else (in default) by name in a read-only cluster-wide rule, rather than a Role
		// in a namespace the run does not otherwise touch.
		ns, name, _ := strings.Cut(a.SecondaryNetwork, "/")
		rule := rbacv1.PolicyRule{APIGroups: []string{nadGroup}, Resources: []string{nadResource}, Verbs: []string{"get"}, ResourceNames: []string{name}}
		if ns == a.Namespace && !a.OwnNamespace {
			namespaced = append(namespaced, rule)
		} else {
			cluster = append(cluster, rule)
		}
	}
	return namespaced, cluster
}

// RBAC returns the objects that grant subject a run's permissions: a Role and RoleBinding in
// the run's namespace (none when the run makes its own namespace, whose name is new each
// run: then its rules go into the ClusterRole) and a ClusterRole and ClusterRoleBinding.
func (a Access) RBAC(subject rbacv1.Subject) []any {
	namespaced, cluster := a.Rules()
	meta := func(ns string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: RBACName, Namespace: ns, Labels: map[string]string{LabelManagedBy: managedBy}}
	}
	var out []any
	if a.OwnNamespace {
		cluster = append(cluster, namespaced...)
	} else {
		out = append(out,
			&rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"}, ObjectMeta: meta(a.Namespace), Rules: namespaced},
			&rbacv1.RoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"}, ObjectMeta: meta(a.Namespace),
				Subjects: []rbacv1.Subject{subject}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: RBACName}})
	}
	return append(out,
		&rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"}, ObjectMeta: meta(""), Rules: cluster},
		&rbacv1.ClusterRoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"}, ObjectMeta: meta(""),
			Subjects: []rbacv1.Subject{subject}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: RBACName}})
}

// reviews lists one access review per verb, resource and subresource of the rules; a rule
// naming objects is checked on its first name, and the NetworkAttachmentDefinition's in its
// own namespace.
func (a Access) reviews() []authv1.ResourceAttributes {
	namespaced, cluster := a.Rules()
	var out []authv1.ResourceAttributes
	add := func(rules []rbacv1.PolicyRule, ns string) {
		for _, r := range rules {
			for _, res := range r.Resources {
				resource, sub, _ := strings.Cut(res, "/")
				for _, verb := range r.Verbs {
					ra := authv1.ResourceAttributes{Verb: verb, Group: r.APIGroups[0], Resource: resource, Subresource: sub, Namespace: ns}
					if len(r.ResourceNames) > 0 {
						ra.Name = r.ResourceNames[0]
					}
					if resource == nadResource {
						ra.Namespace, _, _ = strings.Cut(a.SecondaryNetwork, "/")
					}
					out = append(out, ra)
				}
			}
		}
	}
	if a.OwnNamespace {
		// The namespace does not exist yet: checked as any namespace.
		add(namespaced, "")
	} else {
		add(namespaced, a.Namespace)
	}
	add(cluster, "")
	return out
}

// missing asks the API server, one review per permission, which of the run's permissions the
// credentials lack.
func (c *Client) missing(ctx context.Context, a Access) ([]string, error) {
	var out []string
	for _, ra := range a.reviews() {
		review := &authv1.SelfSubjectAccessReview{Spec: authv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &ra}}
		res, err := c.CS.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("check permissions on %s: %w", c.Server, err)
		}
		if !res.Status.Allowed {
			what := ra.Verb + " " + ra.Resource
			if ra.Subresource != "" {
				what += "/" + ra.Subresource
			}
			out = append(out, what)
		}
	}
	return out, nil
}
