package kube

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// A run's own namespace is labelled privileged exactly when its pods need the host network.
func TestNamespaceLabelsFollowHostNetwork(t *testing.T) {
	pods := FixtureSpec{RunID: "r", Roles: []string{RoleClient, RoleServerA, RoleServerB}}
	host := FixtureSpec{RunID: "r", Roles: []string{RoleClient, RoleHostServer, RoleHostClient}}
	if l := pods.namespaceLabels(); l[LabelPodSecurityEnforce] != "" || l[LabelRun] != "r" {
		t.Errorf("pod paths only: %v", l)
	}
	l := host.namespaceLabels()
	for _, k := range []string{LabelPodSecurityEnforce, LabelPodSecurityWarn, LabelPodSecurityAudit} {
		if l[k] != PodSecurityPrivileged {
			t.Errorf("host network: %s=%q, want privileged (%v)", k, l[k], l)
		}
	}
}

// A given namespace is asked by a dry run, of a host-network pod, and only when the run has
// them; a Pod Security refusal becomes an error naming the label and the paths.
func TestCheckPodSecurity(t *testing.T) {
	spec := FixtureSpec{Namespace: "team", RunID: "r", Image: "img", Roles: []string{RoleClient, RoleHostClient, RoleHostServer},
		Placement: Placement{NodeA: "a", NodeB: "b"}}
	var asked []*corev1.Pod
	cs := fake.NewSimpleClientset()
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		create := a.(k8stesting.CreateActionImpl)
		if len(create.CreateOptions.DryRun) == 0 {
			t.Error("a pod was created for real")
		}
		p := create.GetObject().(*corev1.Pod)
		asked = append(asked, p)
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, p.Name,
			errors.New(`violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true)`))
	})
	c := &Client{CS: cs}
	err := c.CheckPodSecurity(context.Background(), spec, []string{"host-network"})
	var pse *PodSecurityError
	if !errors.As(err, &pse) {
		t.Fatalf("err %v, want a PodSecurityError", err)
	}
	for _, want := range []string{"namespace team", "host-network", "pod-security.kubernetes.io/enforce=privileged", "kubectl label namespace team"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if len(asked) != 1 || !asked[0].Spec.HostNetwork || asked[0].Namespace != "team" {
		t.Errorf("asked about %d pods: %+v", len(asked), asked)
	}
	spec.Roles = []string{RoleClient, RoleServerB}
	if err := c.CheckPodSecurity(context.Background(), spec, nil); err != nil || len(asked) != 1 {
		t.Errorf("pod paths only: %v, %d dry runs", err, len(asked))
	}
	// A safe sysctl needs nothing more; an unsafe one is asked about, named in the error.
	spec.Sysctls = map[string]string{"net.ipv4.tcp_rmem": "4096 131072 67108864"}
	if err := c.CheckPodSecurity(context.Background(), spec, nil); err != nil || len(asked) != 1 || len(spec.namespaceLabels()) != 2 {
		t.Errorf("a safe sysctl: %v, %d dry runs, labels %v", err, len(asked), spec.namespaceLabels())
	}
	spec.Sysctls["net.ipv4.tcp_autocorking"] = "0"
	err = c.CheckPodSecurity(context.Background(), spec, nil)
	if !errors.As(err, &pse) || !strings.Contains(err.Error(), "sysctls net.ipv4.tcp_autocorking, which the tuning sets") || len(asked) != 2 {
		t.Errorf("an unsafe sysctl: %v, %d dry runs", err, len(asked))
	}
	if got := asked[len(asked)-1].Spec.SecurityContext.Sysctls; len(got) != 3 || got[1].Name != "net.ipv4.tcp_autocorking" {
		t.Errorf("the dry-run pod's sysctls %v, want the port range and the profile's two, sorted", got)
	}
	if spec.namespaceLabels()[LabelPodSecurityEnforce] != PodSecurityPrivileged {
		t.Errorf("labels of a run namespace with an unsafe sysctl: %v", spec.namespaceLabels())
	}
}
