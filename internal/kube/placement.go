package kube

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cnibench/cnibench/internal/setting"
)

// PlacementOptions choose the nodes a run uses.
type PlacementOptions struct {
	Nodes          []string // explicit node names (first is A, second B, more spread pairs); empty: choose
	Selector       string   // label selector the chosen nodes must match
	TolerateTaints bool     // place on tainted nodes too (pods tolerate every taint)
	// OneNode accepts a single usable node (clients and servers on it) when only one is
	// found: for runs whose paths all stay on one node. Two are still used when there are.
	OneNode bool
}

// Placement is where clients (A) and remote servers (B) run; with several pairs and more
// than two nodes, Nodes lists every node the pairs spread over (A and B first).
type Placement struct {
	NodeA, NodeB string
	Nodes        []string
}

// all lists the nodes pairs go to, at least A and B.
func (p Placement) all() []string {
	if len(p.Nodes) >= 2 {
		return p.Nodes
	}
	return []string{p.NodeA, p.NodeB}
}

// Place picks two Ready, schedulable nodes. Nodes that are only transiently unusable (not yet
// Ready, or still carrying the not-ready taint a moment after becoming Ready) are waited for,
// up to a minute.
func (c *Client) Place(ctx context.Context, o PlacementOptions) (Placement, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		p, transient, err := c.place(ctx, o)
		if err == nil || !transient || time.Now().After(deadline) {
			return p, err
		}
		select {
		case <-ctx.Done():
			return p, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// place makes one attempt; transient says whether waiting could change the answer.
func (c *Client) place(ctx context.Context, o PlacementOptions) (Placement, bool, error) {
	list, err := c.CS.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: o.Selector})
	if err != nil {
		return Placement{}, false, fmt.Errorf("list nodes (selector %q): %w", o.Selector, err)
	}
	byName := map[string]corev1.Node{}
	var usable []string
	var refused []string
	transient := false
	for _, n := range list.Items {
		byName[n.Name] = n
		if why := unusable(n, o.TolerateTaints); why != "" {
			refused = append(refused, n.Name+" ("+why+")")
			transient = transient || !NodeReady(n)
			continue
		}
		usable = append(usable, n.Name)
	}
	sort.Strings(usable)
	if len(o.Nodes) > 0 {
		if len(o.Nodes) < 2 {
			return Placement{}, false, &setting.Error{Name: "nodes", Value: strings.Join(o.Nodes, ","), Want: "expected at least two node names (client node, server node, more to spread pairs over)"}
		}
		for _, name := range o.Nodes {
			n, ok := byName[name]
			if !ok {
				return Placement{}, false, &setting.Error{Name: "nodes", Value: strconv.Quote(name), Want: fmt.Sprintf("no node of that name matches selector %q", o.Selector)}
			}
			if why := unusable(n, o.TolerateTaints); why != "" {
				return Placement{}, !NodeReady(n), &setting.Error{Name: "nodes", Value: name, Want: "node not usable: " + why}
			}
		}
		return Placement{NodeA: o.Nodes[0], NodeB: o.Nodes[1], Nodes: o.Nodes}, false, nil
	}
	if len(usable) == 1 && o.OneNode {
		return Placement{NodeA: usable[0], NodeB: usable[0], Nodes: usable}, false, nil
	}
	if len(usable) < 2 {
		return Placement{}, transient, fmt.Errorf("need two Ready, schedulable nodes, found %d usable of %d (selector %q); unusable: %s",
			len(usable), len(list.Items), o.Selector, strings.Join(refused, ", "))
	}
	return Placement{NodeA: usable[0], NodeB: usable[1], Nodes: usable}, false, nil
}

// NodeReady reports a node that pods can go to as far as its lifecycle goes: Ready, and free
// of the not-ready/unreachable taints, which the node lifecycle controller lifts a moment after
// Ready. A node that is not is coming up (or going away), not refused for good.
func NodeReady(n corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
			return false
		}
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// unusable says why pods should not go to a node, or "" when they can.
func unusable(n corev1.Node, tolerate bool) string {
	ready := false
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			ready = true
		}
	}
	if !ready {
		return "not Ready"
	}
	if n.Spec.Unschedulable {
		return "cordoned"
	}
	if tolerate {
		return ""
	}
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute {
			return "tainted " + t.Key + ":" + string(t.Effect) + "; use --tolerate-taints"
		}
	}
	return ""
}
