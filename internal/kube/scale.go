package kube

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Up is how many pairs of the fixture are deployed now.
func (f *Fixture) Up() int {
	if len(f.Spec.Roles) == 0 {
		return 0
	}
	return len(f.Pods[f.Spec.Roles[0]])
}

// Scale brings the fixture to pairs pairs (0 up to Spec.Pairs()). A scale-up creates the pods
// of the pairs it lacks as one burst, waits until they are Ready and creates their Services;
// its Stage times the burst. A scale-down deletes the pods and Services of the pairs beyond and
// waits until the kubelets have stopped them, so that none is left running beside the next
// samples; its Stage has no pods.
func (c *Client) Scale(ctx context.Context, f *Fixture, pairs int) (Stage, error) {
	cur := f.Up()
	switch {
	case pairs < 0 || pairs > f.Spec.Pairs():
		return Stage{}, fmt.Errorf("scale to %d pairs: expected 0 to %d, the pairs the fixture has servers for", pairs, f.Spec.Pairs())
	case pairs > cur:
		return c.scaleUp(ctx, f, cur, pairs)
	case pairs < cur:
		return Stage{Pairs: pairs}, c.scaleDown(ctx, f, pairs, cur)
	}
	return Stage{Pairs: pairs}, nil
}

func (c *Client) scaleUp(ctx context.Context, f *Fixture, from, to int) (Stage, error) {
	spec := f.Spec
	tr, err := c.trackPods(ctx, spec.Namespace, LabelRun+"="+spec.RunID)
	if err != nil {
		return Stage{}, err
	}
	defer tr.stop()
	batch := spec.podsOf(from, to)
	began := time.Now()
	err = c.createPods(ctx, tr, batch)
	if err == nil {
		err = tr.waitReady(ctx, names(batch), podReadyTimeout(len(batch)))
	}
	if err != nil {
		// A later scale-up of the same pairs must not find these pods in its way.
		if derr := c.deletePairs(ctx, f, from, to); derr != nil {
			err = fmt.Errorf("%w (and removing the burst's pods: %v)", err, derr)
		}
		return Stage{}, err
	}
	st := Stage{Pairs: to, NewPairs: to - from, Took: time.Since(began), Pods: tr.latencies(names(batch))}
	if spec.has(RoleServerB) {
		for i := from; i < to; i++ {
			svc, err := c.CS.CoreV1().Services(spec.Namespace).Create(ctx, spec.service(i), metav1.CreateOptions{})
			if err != nil {
				return Stage{}, fmt.Errorf("create service: %w", err)
			}
			f.ServiceIPs[i] = svc.Spec.ClusterIP
		}
	}
	for _, role := range spec.Roles {
		for i := from; i < to; i++ {
			f.Pods[role] = append(f.Pods[role], tr.pod(podName(role, i)))
		}
	}
	return st, nil
}

// scaleGrace is the grace period of a scale-down's pods: one second, not zero, since zero
// removes the pod object at once, before the kubelet has stopped its containers.
const scaleGrace = int64(1)

func (c *Client) scaleDown(ctx context.Context, f *Fixture, to, from int) error {
	if err := c.deletePairs(ctx, f, to, from); err != nil {
		return err
	}
	for _, role := range f.Spec.Roles {
		f.Pods[role] = f.Pods[role][:min(to, len(f.Pods[role]))]
	}
	return nil
}

// deletePairs deletes the pods and Services of pairs [from, to) and waits until they are gone.
func (c *Client) deletePairs(ctx context.Context, f *Fixture, from, to int) error {
	spec := f.Spec
	pods := spec.podsOf(from, to)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(podCreators)
	grace := scaleGrace
	for _, p := range pods {
		g.Go(func() error {
			err := c.CS.CoreV1().Pods(spec.Namespace).Delete(gctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete pod %s: %w", p.Name, err)
			}
			return nil
		})
	}
	for i := from; i < to && spec.has(RoleServerB); i++ {
		g.Go(func() error {
			err := c.CS.CoreV1().Services(spec.Namespace).Delete(gctx, ServiceName(i), metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete service %s: %w", ServiceName(i), err)
			}
			f.ServiceIPs[i] = ""
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	left := len(pods)
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, teardownWait, true, func(ctx context.Context) (bool, error) {
		list, err := c.CS.CoreV1().Pods(spec.Namespace).List(ctx, metav1.ListOptions{LabelSelector: LabelRun + "=" + spec.RunID})
		if err != nil {
			return false, nil
		}
		gone := map[string]bool{}
		for _, p := range pods {
			gone[p.Name] = true
		}
		left = 0
		for _, p := range list.Items {
			if gone[p.Name] {
				left++
			}
		}
		return left == 0, nil
	})
	if err != nil {
		return fmt.Errorf("remove pairs %d-%d: %d of %d pods still there: %w", from, to-1, left, len(pods), err)
	}
	return nil
}
