package kube

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// ProbeServiceName names the Service whose programming latency a run measures.
const ProbeServiceName = "cnibench-latency"

// labelProbe is added to the server pod to put it behind the probe Service.
const labelProbe = "cnibench.dev/latency-probe"

// CreateProbeService creates a Service for the first pair's server of a role that selects no
// pod yet: its ClusterIP exists, and its endpoint appears only when AddProbeEndpoint labels
// the server, so the two moments can be timed apart.
func (c *Client) CreateProbeService(ctx context.Context, f *Fixture, role string, port int) (*corev1.Service, error) {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: ProbeServiceName, Namespace: f.Spec.Namespace,
			Labels: map[string]string{LabelManagedBy: managedBy, LabelRun: f.Spec.RunID}},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{LabelRun: f.Spec.RunID, LabelRole: role, LabelPair: "0", labelProbe: "on"},
			Ports:    []corev1.ServicePort{{Name: "tcp", Port: int32(port), TargetPort: intstr.FromInt32(int32(port)), Protocol: corev1.ProtocolTCP}},
		},
	}
	f.Spec.setFamily(&svc.Spec)
	out, err := c.CS.CoreV1().Services(f.Spec.Namespace).Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create service %s: %w", ProbeServiceName, err)
	}
	return out, nil
}

// DeleteProbeService removes the probe Service, so that the next measurement (a run with
// pods per round times one each round) creates it afresh; a Service already gone is no error.
func (c *Client) DeleteProbeService(ctx context.Context, f *Fixture) error {
	err := c.CS.CoreV1().Services(f.Spec.Namespace).Delete(ctx, ProbeServiceName, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete service %s: %w", ProbeServiceName, err)
	}
	return nil
}

// AddProbeEndpoint puts the first pair's server of a role behind the probe Service and returns
// when the Service's EndpointSlice was first seen listing it as ready (the watch event's
// arrival: kube-burner's serviceLatency starts there).
func (c *Client) AddProbeEndpoint(ctx context.Context, f *Fixture, role string) (time.Time, error) {
	ns := f.Spec.Namespace
	sel := discoveryv1.LabelServiceName + "=" + ProbeServiceName
	list, err := c.CS.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return time.Time{}, fmt.Errorf("list endpoints of %s: %w", ProbeServiceName, err)
	}
	// A retry watcher: the API server may end a watch at any time, and it resumes from the
	// last version seen.
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = sel
			return c.CS.DiscoveryV1().EndpointSlices(ns).Watch(ctx, o)
		},
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("watch endpoints of %s: %w", ProbeServiceName, err)
	}
	defer w.Stop()
	pod := f.Pod(role, 0)
	patch := []byte(`{"metadata":{"labels":{"` + labelProbe + `":"on"}}}`)
	if _, err := c.CS.CoreV1().Pods(ns).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return time.Time{}, fmt.Errorf("label pod %s for service %s: %w", pod.Name, ProbeServiceName, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("service %s: no ready endpoint for pod %s: %w", ProbeServiceName, pod.Name, ctx.Err())
		case ev, ok := <-w.ResultChan():
			if !ok {
				return time.Time{}, fmt.Errorf("service %s: the endpoint watch closed", ProbeServiceName)
			}
			at := time.Now()
			if es, isSlice := ev.Object.(*discoveryv1.EndpointSlice); isSlice && ev.Type != watch.Deleted && readyEndpoint(es, podIPOf(pod, f.Spec.Family)) {
				return at, nil
			}
		}
	}
}

func readyEndpoint(es *discoveryv1.EndpointSlice, ip string) bool {
	for _, e := range es.Endpoints {
		if e.Conditions.Ready != nil && *e.Conditions.Ready {
			for _, a := range e.Addresses {
				if a == ip {
					return true
				}
			}
		}
	}
	return false
}

// ReadinessPodName names the pod that times how soon its own network carries traffic.
const ReadinessPodName = "cnibench-netready"

// RunOnce runs argv as the only container of a new pod-network pod on the first client's node,
// waits until it exits and returns its output. The network readiness probe runs so: the
// container starts probing the moment it runs, before anything outside could tell it was up.
func (c *Client) RunOnce(ctx context.Context, f *Fixture, name string, argv []string, timeout time.Duration) (string, error) {
	s := f.Spec
	grace := int64(1)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.Namespace,
			Labels: map[string]string{LabelManagedBy: managedBy, LabelRun: s.RunID, LabelRole: name}},
		Spec: corev1.PodSpec{
			NodeName: s.node(RoleClient, 0), RestartPolicy: corev1.RestartPolicyNever, TerminationGracePeriodSeconds: &grace,
			AutomountServiceAccountToken: new(bool), ImagePullSecrets: pullSecrets(s.PullSecret),
			Containers: []corev1.Container{{Name: "probe", Image: s.Image, ImagePullPolicy: corev1.PullIfNotPresent, Command: argv}},
		},
	}
	if s.RuntimeClass != "" {
		pod.Spec.RuntimeClassName = &s.RuntimeClass
	}
	if s.TolerateTaints {
		pod.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	}
	pods := c.CS.CoreV1().Pods(s.Namespace)
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("create pod %s: %w", name, err)
	}
	var last *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil // transient: the deadline reports it
		}
		last = p
		if why := stuck(p); why != "" {
			return false, fmt.Errorf("pod %s cannot start: %s", name, why)
		}
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed, nil
	})
	if err != nil {
		return "", fmt.Errorf("pod %s did not finish: %w (%s)", name, err, describe(last))
	}
	out, err := pods.GetLogs(name, &corev1.PodLogOptions{Container: "probe"}).DoRaw(ctx)
	if err != nil {
		return "", fmt.Errorf("logs of pod %s: %w", name, err)
	}
	if last.Status.Phase == corev1.PodFailed {
		return "", fmt.Errorf("pod %s failed: %s", name, out)
	}
	return string(out), nil
}
