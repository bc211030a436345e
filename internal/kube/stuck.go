package kube

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
)

// finalizerWait is how long teardown gives a namespace that its controller could not empty
// (objects held by finalizers, or a resource type it cannot discover) before it names what
// holds it and stops waiting: the controllers that own finalizers act within seconds as a
// rule, and a finalizer nobody removes would otherwise keep the run waiting for minutes.
const finalizerWait = 30 * time.Second

// blockingConditions are the namespace controller's conditions that say a namespace cannot
// finish terminating by itself: objects whose finalizers remain, a resource type it cannot
// list or delete.
var blockingConditions = []corev1.NamespaceConditionType{
	corev1.NamespaceFinalizersRemaining, corev1.NamespaceDeletionDiscoveryFailure,
	corev1.NamespaceDeletionContentFailure, corev1.NamespaceDeletionGVParsingFailure,
}

// blocked returns the message of the first condition that keeps a terminating namespace
// from going, "" when none does.
func blocked(ns *corev1.Namespace) string {
	for _, want := range blockingConditions {
		for _, c := range ns.Status.Conditions {
			if c.Type == want && c.Status == corev1.ConditionTrue {
				return strings.TrimSpace(c.Message)
			}
		}
	}
	return ""
}

// HeldObject is an object kept by its finalizers.
type HeldObject struct {
	Resource   string // resource[.group], as kubectl takes it: configmaps, widgets.example.com
	Name       string
	Finalizers []string
}

// StuckNamespaceError is a namespace a run made and could not remove: it stays Terminating
// for what Reason says, held by Objects where the run's credentials could list them.
type StuckNamespaceError struct {
	Namespace string
	Reason    string // the namespace controller's condition
	Objects   []HeldObject
	// Unlisted counts the resource types the credentials could not list: Objects may miss
	// what holds the namespace.
	Unlisted int
}

// maxHeldNamed bounds the objects an error names.
const maxHeldNamed = 5

func (e *StuckNamespaceError) Error() string {
	ns := e.Namespace
	switch {
	case len(e.Objects) == 0 && e.Unlisted > 0:
		return fmt.Sprintf("namespace %s stuck Terminating: %s (the run's credentials cannot list %d resource types, which may hold it: "+
			"`kubectl api-resources --verbs=list --namespaced -o name | xargs -n 1 kubectl get --show-kind --ignore-not-found -n %s` lists what is left)",
			ns, e.Reason, e.Unlisted, ns)
	case len(e.Objects) == 0:
		return fmt.Sprintf("namespace %s stuck Terminating: %s", ns, e.Reason)
	}
	var held []string
	for _, o := range e.Objects[:min(len(e.Objects), maxHeldNamed)] {
		held = append(held, fmt.Sprintf("finalizer %s on %s %s", strings.Join(o.Finalizers, ", "), o.Resource, o.Name))
	}
	if more := len(e.Objects) - maxHeldNamed; more > 0 {
		held = append(held, fmt.Sprintf("and %d more objects", more))
	}
	o := e.Objects[0]
	fix := fmt.Sprintf(`kubectl --namespace %s patch %s %s --type=merge -p '{"metadata":{"finalizers":null}}'`, ns, o.Resource, o.Name)
	if len(e.Objects) > 1 {
		fix = "for each: " + strings.Replace(fix, o.Resource+" "+o.Name, "RESOURCE NAME", 1)
	}
	return fmt.Sprintf("namespace %s stuck Terminating: %s; remove it with %s (the controller that set it should have; the namespace then goes by itself)",
		ns, strings.Join(held, "; "), fix)
}

// stuckNamespace describes a namespace held as blocked says: the objects in it that still carry
// finalizers, as far as the credentials can list them.
func (c *Client) stuckNamespace(ctx context.Context, ns, reason string) error {
	e := &StuckNamespaceError{Namespace: ns, Reason: reason}
	if c.config == nil {
		return e
	}
	dyn, err := dynamic.NewForConfig(c.config)
	if err != nil {
		return e
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	e.Objects, e.Unlisted = heldObjects(ctx, c.CS.Discovery(), dyn, ns)
	return e
}

// heldObjects lists every namespaced resource type that can be listed and returns the
// objects of ns that carry finalizers, and the number of types the credentials could not
// list. Discovery may fail for some groups (an aggregated API that does not answer): the
// others are still listed.
func heldObjects(ctx context.Context, disc discovery.DiscoveryInterface, dyn dynamic.Interface, ns string) ([]HeldObject, int) {
	lists, _ := discovery.ServerPreferredNamespacedResources(disc)
	var out []HeldObject
	unlisted := 0
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") {
				continue
			}
			items, err := dyn.Resource(gv.WithResource(r.Name)).Namespace(ns).List(ctx, metav1.ListOptions{})
			switch {
			case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
				unlisted++
				continue
			case err != nil:
				continue
			}
			resource := r.Name
			if gv.Group != "" {
				resource += "." + gv.Group
			}
			for _, it := range items.Items {
				if f := it.GetFinalizers(); len(f) > 0 {
					out = append(out, HeldObject{Resource: resource, Name: it.GetName(), Finalizers: f})
				}
			}
		}
	}
	// Discovery's groups come in no fixed order.
	slices.SortFunc(out, func(a, b HeldObject) int {
		return cmp.Or(strings.Compare(a.Resource, b.Resource), strings.Compare(a.Name, b.Name))
	})
	return out, unlisted
}

// errBlocked ends teardown's wait for a namespace that cannot go by itself.
var errBlocked = errors.New("namespace blocked")
