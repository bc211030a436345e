package kube

import (
	"context"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func node(name string, ready bool, taints ...corev1.Taint) *corev1.Node {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pool": strings.TrimRight(name, "0123456789")}},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}},
	}
}

var noSchedule = corev1.Taint{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}

func TestPlaceChoosesUsableNodes(t *testing.T) {
	ctx := context.Background()
	c := &Client{CS: fake.NewSimpleClientset(
		node("b2", true), node("a1", true, noSchedule), node("c3", false), node("d4", true),
		node("gpu1", true), node("gpu2", true),
	)}
	p, transient, err := c.place(ctx, PlacementOptions{Selector: "pool=gpu"})
	if err != nil || !reflect.DeepEqual(p, Placement{NodeA: "gpu1", NodeB: "gpu2", Nodes: []string{"gpu1", "gpu2"}}) || transient {
		t.Errorf("selector: %+v %v %v", p, transient, err)
	}
	p, _, err = c.place(ctx, PlacementOptions{Selector: "pool in (a,b,c,d)"})
	if err != nil || !reflect.DeepEqual(p, Placement{NodeA: "b2", NodeB: "d4", Nodes: []string{"b2", "d4"}}) {
		t.Errorf("tainted a1 and not-ready c3 must be skipped: %+v %v", p, err)
	}
	p, _, err = c.place(ctx, PlacementOptions{Selector: "pool in (a,b)", TolerateTaints: true})
	if err != nil || !reflect.DeepEqual(p, Placement{NodeA: "a1", NodeB: "b2", Nodes: []string{"a1", "b2"}}) {
		t.Errorf("--tolerate-taints: %+v %v", p, err)
	}
	_, transient, err = c.place(ctx, PlacementOptions{Selector: "pool in (a,c)"})
	if err == nil || !strings.Contains(err.Error(), "use --tolerate-taints") || !strings.Contains(err.Error(), "c3 (not Ready)") {
		t.Errorf("error should explain each refusal: %v", err)
	}
	if !transient {
		t.Error("a node that is not Ready yet may become usable: the failure is transient")
	}
}

func TestPlaceExplicitNodes(t *testing.T) {
	ctx := context.Background()
	c := &Client{CS: fake.NewSimpleClientset(node("n1", true), node("n2", true), node("n3", true, noSchedule))}
	if p, _, err := c.place(ctx, PlacementOptions{Nodes: []string{"n2", "n1"}}); err != nil || !reflect.DeepEqual(p, Placement{NodeA: "n2", NodeB: "n1", Nodes: []string{"n2", "n1"}}) {
		t.Errorf("explicit order: %+v %v", p, err)
	}
	for _, nodes := range [][]string{{"n1"}, {"n1", "nope"}, {"n1", "n3"}, {"n1", "n2", "n3"}} {
		if _, _, err := c.place(ctx, PlacementOptions{Nodes: nodes}); err == nil || !strings.Contains(err.Error(), "nodes: ") {
			t.Errorf("--nodes %v: %v", nodes, err)
		}
	}
}

// A run whose paths stay on one node takes a single-node cluster; others still need two.
func TestPlaceOneNode(t *testing.T) {
	ctx := context.Background()
	c := &Client{CS: fake.NewSimpleClientset(node("n1", true), node("n2", false))}
	p, _, err := c.place(ctx, PlacementOptions{OneNode: true})
	if err != nil || !reflect.DeepEqual(p, Placement{NodeA: "n1", NodeB: "n1", Nodes: []string{"n1"}}) {
		t.Errorf("one usable node, one-node paths: %+v %v", p, err)
	}
	if _, _, err := c.place(ctx, PlacementOptions{}); err == nil || !strings.Contains(err.Error(), "need two Ready, schedulable nodes, found 1") {
		t.Errorf("one usable node, two-node paths: %v", err)
	}
	c = &Client{CS: fake.NewSimpleClientset(node("n1", true), node("n2", true))}
	if p, _, err := c.place(ctx, PlacementOptions{OneNode: true}); err != nil || p.NodeA == p.NodeB {
		t.Errorf("two usable nodes are both used: %+v %v", p, err)
	}
	if s := (Placement{NodeA: "n1", NodeB: "n1"}).all(); len(s) != 2 || s[1] != "n1" {
		t.Errorf("a one-node placement puts remote servers on the same node: %v", s)
	}
}

func TestNotReadyTaintIsTransient(t *testing.T) {
	coming := node("n1", true, corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute})
	if NodeReady(*coming) || !NodeReady(*node("n2", true, noSchedule)) {
		t.Error("only the lifecycle controller's taints and readiness are transient")
	}
}
