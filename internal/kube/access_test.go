package kube

import (
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

// In a namespace given to the run, everything it writes is namespaced: the cluster-wide rules
// only read, and preflight reviews the namespaced rules in that namespace.
func TestAccessWritesOnlyInItsNamespace(t *testing.T) {
	a := Access{Namespace: "bench", Policies: true}
	subject := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}
	objs := a.RBAC(subject)
	if len(objs) != 4 {
		t.Fatalf("%d objects, want a Role, a RoleBinding, a ClusterRole and its binding", len(objs))
	}
	role, ok := objs[0].(*rbacv1.Role)
	if !ok || role.Namespace != "bench" || !grants(role.Rules, "pods/exec", "create") || !grants(role.Rules, "networkpolicies", "create") {
		t.Errorf("role %+v", objs[0])
	}
	cr := objs[2].(*rbacv1.ClusterRole)
	for _, r := range cr.Rules {
		for _, v := range r.Verbs {
			if !slices.Contains([]string{"get", "list", "watch"}, v) {
				t.Errorf("cluster-wide rule %v may %s", r.Resources, v)
			}
		}
	}
	if b := objs[3].(*rbacv1.ClusterRoleBinding); b.Subjects[0] != subject || b.RoleRef.Name != cr.Name {
		t.Errorf("binding %+v", b)
	}
	for _, ra := range a.reviews() {
		namespaced := !slices.Contains([]string{"nodes", "runtimeclasses", "daemonsets", "configmaps"}, ra.Resource)
		if namespaced != (ra.Namespace == "bench") {
			t.Errorf("review %+v: namespace %q", ra, ra.Namespace)
		}
		if ra.Resource == "configmaps" && ra.Name == "" {
			t.Errorf("the ConfigMap review names no object: %+v", ra)
		}
	}
	if grants(cr.Rules, "namespaces", "create") {
		t.Error("a run in a given namespace may not make namespaces")
	}
}

// A run that makes its own namespace each time has only cluster-wide rules to cover it.
func TestAccessOwnNamespaceIsClusterWide(t *testing.T) {
	objs := Access{OwnNamespace: true}.RBAC(rbacv1.Subject{Kind: rbacv1.GroupKind, Name: "benchers"})
	if len(objs) != 2 {
		t.Fatalf("%d objects, want a ClusterRole and its binding", len(objs))
	}
	cr := objs[0].(*rbacv1.ClusterRole)
	if !grants(cr.Rules, "namespaces", "create") || !grants(cr.Rules, "pods", "create") || grants(cr.Rules, "networkpolicies", "create") {
		t.Errorf("cluster role rules %+v", cr.Rules)
	}
}

// grants says whether rules allow verb on resource.
func grants(rules []rbacv1.PolicyRule, resource, verb string) bool {
	for _, r := range rules {
		if slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
			return true
		}
	}
	return false
}
