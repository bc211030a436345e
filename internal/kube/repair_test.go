package kube

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// runPod is a pod of run "r1" as the cluster holds it.
func runPod(name string, uid types.UID, edit func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: uid, Labels: map[string]string{LabelRun: "r1"}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	if edit != nil {
		edit(p)
	}
	return p
}

// TestGoneNamesWhatBecameOfEachPod deploys (as far as the fixture knows) six pods and finds
// them running, deleted, terminating, evicted, failed and replaced by someone else's.
func TestGoneNamesWhatBecameOfEachPod(t *testing.T) {
	now := metav1.Now()
	cluster := []runtime.Object{
		runPod("cnibench-client-0", "c0", nil),
		runPod("cnibench-server-a-0", "a0", func(p *corev1.Pod) { p.DeletionTimestamp = &now }),
		runPod("cnibench-server-b-0", "b0", func(p *corev1.Pod) {
			p.Status = corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "The node was low on resource: memory. "}
		}),
		runPod("cnibench-client-1", "c1", func(p *corev1.Pod) {
			p.Status = corev1.PodStatus{Phase: corev1.PodFailed, Reason: "OOMKilled"}
		}),
		runPod("cnibench-server-a-1", "other", nil),
	}
	f := &Fixture{Spec: FixtureSpec{Namespace: "ns", RunID: "r1", Roles: []string{RoleClient, RoleServerA, RoleServerB}}, Pods: map[string][]*corev1.Pod{
		RoleClient:  {runPod("cnibench-client-0", "c0", nil), runPod("cnibench-client-1", "c1", nil)},
		RoleServerA: {runPod("cnibench-server-a-0", "a0", nil), runPod("cnibench-server-a-1", "a1", nil)},
		RoleServerB: {runPod("cnibench-server-b-0", "b0", nil), runPod("cnibench-server-b-1", "b1", nil)},
	}}
	c := &Client{CS: fake.NewSimpleClientset(cluster...)}
	gone, err := c.Gone(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	want := []GonePod{
		{RoleClient, 1, "cnibench-client-1", "failed: OOMKilled"},
		{RoleServerA, 0, "cnibench-server-a-0", "deleted"},
		{RoleServerA, 1, "cnibench-server-a-1", "replaced by another pod of its name"},
		{RoleServerB, 0, "cnibench-server-b-0", "evicted: The node was low on resource: memory."},
		{RoleServerB, 1, "cnibench-server-b-1", "deleted"},
	}
	if !reflect.DeepEqual(gone, want) {
		t.Errorf("gone:\n got %+v\nwant %+v", gone, want)
	}
	if s := gone[3].String(); s != "pod cnibench-server-b-0 (server-b) evicted: The node was low on resource: memory." {
		t.Errorf("String: %q", s)
	}
}

// TestBlockedReadsTheNamespaceController holds which of the namespace controller's conditions
// mean a namespace cannot go by itself: content still being deleted is not one of them.
func TestBlockedReadsTheNamespaceController(t *testing.T) {
	cond := func(ty corev1.NamespaceConditionType, st corev1.ConditionStatus, msg string) corev1.NamespaceCondition {
		return corev1.NamespaceCondition{Type: ty, Status: st, Message: msg}
	}
	ns := &corev1.Namespace{Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating, Conditions: []corev1.NamespaceCondition{
		cond(corev1.NamespaceContentRemaining, corev1.ConditionTrue, "Some resources are remaining: pods. has 2 resource instances"),
		cond(corev1.NamespaceDeletionDiscoveryFailure, corev1.ConditionFalse, "All resources successfully discovered"),
	}}}
	if got := blocked(ns); got != "" {
		t.Errorf("pods still stopping: blocked %q, want not", got)
	}
	ns.Status.Conditions = append(ns.Status.Conditions,
		cond(corev1.NamespaceFinalizersRemaining, corev1.ConditionTrue, "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"))
	if got := blocked(ns); !strings.Contains(got, "example.com/hold in 1 resource instances") {
		t.Errorf("a finalizer left: blocked %q", got)
	}
}

// TestStuckNamespaceNamesTheObjectsAndTheFix lists a namespace's objects through fake discovery
// and a fake dynamic client: the objects with finalizers are named with the command that
// frees each, a type the credentials cannot list is counted, and without any named object the
// error says how to find them.
func TestStuckNamespaceNamesTheObjectsAndTheFix(t *testing.T) {
	disc := &fakediscovery.FakeDiscovery{Fake: &k8stesting.Fake{Resources: []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "configmaps", Namespaced: true, Kind: "ConfigMap", Verbs: []string{"list", "get"}},
			{Name: "secrets", Namespaced: true, Kind: "Secret", Verbs: []string{"list"}},
			{Name: "pods/log", Namespaced: true, Kind: "Pod", Verbs: []string{"get"}},
		}},
		{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{
			{Name: "widgets", Namespaced: true, Kind: "Widget", Verbs: []string{"list", "delete"}},
		}},
	}}}
	obj := func(apiVersion, kind, name string, finalizers ...string) runtime.Object {
		u := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name, "namespace": "cnibench-x"}}
		if len(finalizers) > 0 {
			fs := make([]any, len(finalizers))
			for i, f := range finalizers {
				fs[i] = f
			}
			u["metadata"].(map[string]any)["finalizers"] = fs
		}
		return &unstructured.Unstructured{Object: u}
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		{Version: "v1", Resource: "configmaps"}: "ConfigMapList", {Version: "v1", Resource: "secrets"}: "SecretList",
		{Group: "example.com", Version: "v1", Resource: "widgets"}: "WidgetList",
	}, obj("v1", "ConfigMap", "hold", "example.com/hold"), obj("v1", "ConfigMap", "free"), obj("example.com/v1", "Widget", "w", "example.com/a", "example.com/b"))
	dyn.PrependReactor("list", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "", errors.New("not granted"))
	})
	held, unlisted := heldObjects(context.Background(), disc, dyn, "cnibench-x")
	want := []HeldObject{{"configmaps", "hold", []string{"example.com/hold"}}, {"widgets.example.com", "w", []string{"example.com/a", "example.com/b"}}}
	if !reflect.DeepEqual(held, want) || unlisted != 1 {
		t.Fatalf("held %+v, %d unlisted; want %+v and the secrets", held, unlisted, want)
	}
	one := (&StuckNamespaceError{Namespace: "cnibench-x", Objects: held[:1]}).Error()
	if !strings.Contains(one, "namespace cnibench-x stuck Terminating: finalizer example.com/hold on configmaps hold; remove it with "+
		`kubectl --namespace cnibench-x patch configmaps hold --type=merge -p '{"metadata":{"finalizers":null}}'`) {
		t.Errorf("one object: %s", one)
	}
	if two := (&StuckNamespaceError{Namespace: "cnibench-x", Objects: held}).Error(); !strings.Contains(two, "example.com/a, example.com/b on widgets.example.com w") ||
		!strings.Contains(two, "for each: kubectl --namespace cnibench-x patch RESOURCE NAME") {
		t.Errorf("two objects: %s", two)
	}
	none := (&StuckNamespaceError{Namespace: "cnibench-x", Reason: "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances", Unlisted: 3}).Error()
	if !strings.Contains(none, "example.com/hold in 1 resource instances") || !strings.Contains(none, "cannot list 3 resource types") ||
		!strings.Contains(none, "kubectl get --show-kind --ignore-not-found -n cnibench-x") {
		t.Errorf("nothing listed: %s", none)
	}
}
