package kube

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// GonePod is a pod of a fixture that no longer runs as it was deployed.
type GonePod struct {
	Role string
	Pair int
	Name string
	// Why says what happened to it: "deleted", "evicted: The node was low on resource:
	// memory.", "failed: ...", "replaced by another pod of its name".
	Why string
}

// String names the pod with its role and what happened to it.
func (g GonePod) String() string { return fmt.Sprintf("pod %s (%s) %s", g.Name, g.Role, g.Why) }

// Gone lists the fixture's pods that no longer run as deployed: deleted (gone, or being
// deleted), evicted, failed for good, or replaced by someone else's pod of the same name.
// The run's pods are bare pods, which nothing makes again: Replace does.
func (c *Client) Gone(ctx context.Context, f *Fixture) ([]GonePod, error) {
	var list *corev1.PodList
	err := retryAPI(ctx, func() error {
		var err error
		list, err = c.CS.CoreV1().Pods(f.Spec.Namespace).List(ctx, metav1.ListOptions{LabelSelector: LabelRun + "=" + f.Spec.RunID})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list the run's pods: %w", err)
	}
	now := map[string]*corev1.Pod{}
	for i := range list.Items {
		now[list.Items[i].Name] = &list.Items[i]
	}
	var out []GonePod
	for _, role := range f.Spec.Roles {
		for pair, had := range f.Pods[role] {
			if had == nil {
				continue
			}
			if why := goneWhy(had, now[had.Name]); why != "" {
				out = append(out, GonePod{Role: role, Pair: pair, Name: had.Name, Why: why})
			}
		}
	}
	return out, nil
}

// goneWhy says what became of a deployed pod, given its object now (nil: not found); "" while
// it runs as deployed.
func goneWhy(had, now *corev1.Pod) string {
	switch {
	case now == nil || now.DeletionTimestamp != nil:
		return "deleted"
	case now.UID != had.UID:
		return "replaced by another pod of its name"
	case now.Status.Phase != corev1.PodFailed && now.Status.Phase != corev1.PodSucceeded:
		return ""
	case now.Status.Reason == "Evicted":
		return "evicted: " + strings.TrimSpace(now.Status.Message)
	}
	why := strings.ToLower(string(now.Status.Phase))
	if detail := strings.TrimSpace(now.Status.Reason + " " + now.Status.Message); detail != "" {
		why += ": " + detail
	}
	return why
}

// Replace makes the gone pods again as the fixture deployed them, on the same nodes: it
// deletes what is left of them, waits until they are gone, creates them and waits until they
// are Ready. The fixture then holds the new pods, whose addresses may differ; a pair's Service
// finds its new server by its labels. It returns how long that took.
func (c *Client) Replace(ctx context.Context, f *Fixture, gone []GonePod) (time.Duration, error) {
	began := time.Now()
	ns := f.Spec.Namespace
	names := make([]string, len(gone))
	pods := make([]*corev1.Pod, len(gone))
	grace := scaleGrace
	for i, g := range gone {
		names[i], pods[i] = g.Name, f.Spec.pod(g.Role, g.Pair)
		err := retryAPI(ctx, func() error {
			err := c.CS.CoreV1().Pods(ns).Delete(ctx, g.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		})
		if err != nil {
			return time.Since(began), fmt.Errorf("delete what is left of pod %s: %w", g.Name, err)
		}
	}
	if err := c.awaitPodsGone(ctx, ns, names); err != nil {
		return time.Since(began), err
	}
	tr, err := c.trackPods(ctx, ns, LabelRun+"="+f.Spec.RunID)
	if err != nil {
		return time.Since(began), err
	}
	defer tr.stop()
	if err := c.createPods(ctx, tr, pods); err != nil {
		return time.Since(began), err
	}
	if err := tr.waitReady(ctx, names, podReadyTimeout(len(pods))); err != nil {
		return time.Since(began), err
	}
	for _, g := range gone {
		f.Pods[g.Role][g.Pair] = tr.pod(g.Name)
	}
	return time.Since(began), nil
}

// awaitPodsGone waits until no pod of the names exists, so that a new pod of the same name
// never shares its node's ports with the old one's containers.
func (c *Client) awaitPodsGone(ctx context.Context, ns string, names []string) error {
	left := names
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, teardownWait, true, func(ctx context.Context) (bool, error) {
		var still []string
		for _, name := range names {
			_, err := c.CS.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if !apierrors.IsNotFound(err) {
				still = append(still, name)
			}
		}
		left = still
		return len(still) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("pods %s still there after %s: %w", strings.Join(left, ", "), teardownWait, err)
	}
	return nil
}
