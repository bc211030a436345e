package kube

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// matches evaluates a policy selector against a pod's labels, as the API server and CNIs do.
func matches(t *testing.T, sel *metav1.LabelSelector, pod *corev1.Pod) bool {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Fatal(err)
	}
	return s.Matches(labels.Set(pod.Labels))
}

func TestPoliciesSelectTheFixturePods(t *testing.T) {
	fx := FixtureSpec{Namespace: "ns", RunID: "r1", Servers: [][]Server{{{Name: "srv0", Port: 25201}, {Name: "srv1", Port: 25202}}, {{Name: "srv0", Port: 25203}, {Name: "srv1", Port: 25204}}}}
	other := FixtureSpec{Namespace: "ns", RunID: "r2", Servers: fx.Servers}
	ps := PolicySpec{Namespace: "ns", RunID: "r1", Allow: true, Ports: []int{25201, 25202}, Extra: 3}

	allow := ps.allow()
	selected := map[string]bool{RoleServerA: true, RoleServerB: true}
	for _, role := range []string{RoleClient, RoleServerA, RoleServerB, RoleHostClient, RoleHostServer, RoleLocal} {
		if got := matches(t, &allow.Spec.PodSelector, fx.pod(role, 1)); got != selected[role] {
			t.Errorf("allow policy selects %s: %v, want %v", role, got, selected[role])
		}
		if got := matches(t, &allow.Spec.PodSelector, other.pod(role, 0)); got {
			t.Errorf("allow policy selects another run's %s", role)
		}
		peer := allow.Spec.Ingress[0].From[0].PodSelector
		if got := matches(t, peer, fx.pod(role, 1)); got != (role == RoleClient) {
			t.Errorf("allow policy admits %s: %v", role, got)
		}
		for i := 0; i < ps.Extra; i++ {
			if matches(t, &ps.unrelated(i).Spec.PodSelector, fx.pod(role, 1)) {
				t.Errorf("unrelated policy %d selects %s", i, role)
			}
		}
	}
	if n := len(allow.Spec.Ingress[0].Ports); n != 4 {
		t.Errorf("allow policy opens %d port/protocol pairs, want 4 (2 ports, TCP and UDP)", n)
	}
	if a, b := ps.unrelated(0), ps.unrelated(1); a.Name == b.Name || a.Labels[LabelRun] != "r1" {
		t.Errorf("unrelated policies: names %s, %s; run label %q", a.Name, b.Name, a.Labels[LabelRun])
	}
}
