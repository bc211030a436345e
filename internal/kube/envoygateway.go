package kube

import (
	"context"
	"fmt"
	"time"

	"github.com/cnibench/cnibench/internal/lab"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
)

// Envoy Gateway, the local cluster's second Gateway API implementation: its controller runs in
// the cluster (created with it); a run's GatewayClass names an EnvoyProxy of the run's, and
// the controller then runs one Envoy proxy for the run's Gateway in its own namespace.
const (
	// EnvoyGatewayController is the controllerName of Envoy Gateway's GatewayClasses.
	EnvoyGatewayController = "gateway.envoyproxy.io/gatewayclass-controller"
	// EnvoyContainer is the proxy's container in the pods Envoy Gateway creates, read for its
	// CPU and memory.
	EnvoyContainer = "envoy"
	// envoyProxyName is the run's EnvoyProxy in its namespace.
	envoyProxyName = "cnibench"
)

var gvrEnvoyProxy = schema.GroupVersionResource{Group: "gateway.envoyproxy.io", Version: "v1alpha1", Resource: "envoyproxies"}

// createEnvoyClass creates the run's EnvoyProxy and a GatewayClass of Envoy Gateway's naming it.
// The proxy runs Envoy from the run's image (the local cluster's tools image carries it) on the
// split's node, behind a ClusterIP Service (no load balancer here), without access logs
// (Traefik writes none either: a log line per request would be a cost of the comparison's own).
func (c *Client) createEnvoyClass(ctx context.Context, dc dynamic.Interface, s GatewaySpec, class string) error {
	pod := map[string]any{"affinity": map[string]any{"nodeAffinity": map[string]any{
		"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{"nodeSelectorTerms": []any{map[string]any{
			"matchFields": []any{map[string]any{"key": "metadata.name", "operator": "In", "values": []any{s.Node}}},
		}}}}}}
	if s.TolerateTaints {
		pod["tolerations"] = []any{map[string]any{"operator": string(corev1.TolerationOpExists)}}
	}
	ep := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.envoyproxy.io/v1alpha1", "kind": "EnvoyProxy",
		"metadata": map[string]any{"name": envoyProxyName, "namespace": s.Namespace, "labels": toAny(s.labels(RoleGateway))},
		"spec": map[string]any{
			"provider": map[string]any{"type": "Kubernetes", "kubernetes": map[string]any{
				"envoyDeployment": map[string]any{"replicas": int64(1), "container": map[string]any{"image": s.Image}, "pod": pod},
				"envoyService":    map[string]any{"type": "ClusterIP"},
			}},
			"telemetry": map[string]any{"accessLog": map[string]any{"disable": true}},
		},
	}}
	if _, err := dc.Resource(gvrEnvoyProxy).Namespace(s.Namespace).Create(ctx, ep, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create EnvoyProxy (does the cluster run Envoy Gateway?): %w", err)
	}
	gc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
		"metadata": map[string]any{"name": class, "labels": toAny(s.labels(RoleGateway))},
		"spec": map[string]any{"controllerName": EnvoyGatewayController, "parametersRef": map[string]any{
			"group": "gateway.envoyproxy.io", "kind": "EnvoyProxy", "name": envoyProxyName, "namespace": s.Namespace}},
	}}
	if _, err := dc.Resource(gvrGatewayClass).Create(ctx, gc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create GatewayClass %s: %w", class, err)
	}
	return nil
}

// waitEnvoyProxy waits until Envoy Gateway has made the Gateway's proxy and it is ready, and
// returns its pod, in lab.EnvoyGatewayNamespace.
func (c *Client) waitEnvoyProxy(ctx context.Context, s GatewaySpec) (string, error) {
	sel := "gateway.envoyproxy.io/owning-gateway-name=" + gatewayName + ",gateway.envoyproxy.io/owning-gateway-namespace=" + s.Namespace
	var name, last string
	err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := c.CS.CoreV1().Pods(lab.EnvoyGatewayNamespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = fmt.Sprintf("%d pods", len(pods.Items))
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && podReady(&p) {
				name = p.Name
				return true, nil
			}
			last = fmt.Sprintf("pod %s is %s%s", p.Name, p.Status.Phase, waitingReason(&p))
		}
		return false, nil
	})
	if err != nil {
		return "", fmt.Errorf("the proxy Envoy Gateway runs for the Gateway (%s in %s) not ready after 3m (%s): %w", sel, lab.EnvoyGatewayNamespace, last, err)
	}
	return name, nil
}

// waitingReason names why a pod's first waiting container waits, for messages.
func waitingReason(p *corev1.Pod) string {
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			return fmt.Sprintf(" (%s: %s %s)", cs.Name, w.Reason, w.Message)
		}
	}
	return ""
}
