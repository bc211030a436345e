package kube

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/agentcmd"
	"github.com/cnibench/cnibench/internal/lab"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
)

// The Gateway API split a run measures: two backends that answer with their pod's name behind
// one Gateway, and one HTTPRoute per weight the suite asks for, each on a host name of its own.
const (
	// GatewayPort is the Gateway's HTTP listener (and Traefik's entry point: Traefik maps
	// listeners to entry points by port).
	GatewayPort = 8000
	// BackendPort is where the backends answer.
	BackendPort = 8080
	// TraefikController is the controllerName of Traefik's Gateway API provider.
	TraefikController = "traefik.io/gateway-controller"
	// GatewayContainer is the controller's container, read for its CPU and memory.
	GatewayContainer = "gateway"
)

// Roles of the split's pods.
const (
	RoleGateway  = "gateway"   // the Traefik controller the local cluster deploys
	RoleBackendA = "backend-a" // gets the route's weight
	RoleBackendB = "backend-b" // gets the rest
)

var (
	gvrGatewayClass = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gatewayclasses"}
	gvrGateway      = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}
	gvrHTTPRoute    = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "httproutes"}
)

// GatewaySpec is the split a run deploys.
type GatewaySpec struct {
	Namespace, RunID, Image string
	// PullSecret is a Secret in Namespace the nodes pull Image with; empty: none.
	PullSecret string
	// Node is where the backends and the controller run: the server node.
	Node string
	// ClassName is an existing GatewayClass, whose implementation serves the Gateway; empty
	// deploys Traefik from Image (its binary at /usr/local/bin/traefik) with a class of the run's,
	// or with Envoy a class of Envoy Gateway's.
	ClassName string
	// Envoy serves the Gateway with the Envoy Gateway the cluster runs, through a class of the
	// run's whose EnvoyProxy runs Envoy from Image (/usr/local/bin/envoy) on Node.
	Envoy bool
	// Variant sets the run's cluster-wide names (GatewayClass, ClusterRole) of this target apart
	// from those of other targets sharing the cluster; empty for a target alone on it.
	Variant string
	// Weights are the percentages to backend-a, one HTTPRoute each, on the host name Hosts
	// gives it.
	Weights        []int
	Hosts          func(weight int) string
	TolerateTaints bool
}

// Gateway is a deployed split.
type Gateway struct {
	URL        string // where clients send requests: the Gateway's address and listener port
	First      string // the pod name backend-a answers with
	Controller string // the pod serving the Gateway the run deployed; empty with an existing class
	// ControllerNamespace is the Controller's namespace where it is not the run's (Envoy
	// Gateway's proxies run in the controller's namespace).
	ControllerNamespace string
	// ControllerContainer is the Controller's container that serves: GatewayContainer
	// (Traefik) or EnvoyContainer.
	ControllerContainer string
	Class               string
}

// gatewayName is the run's Gateway in its namespace.
const gatewayName = "cnibench"

// DeployGateway creates the split and waits until its routes are accepted and its pods ready.
func (c *Client) DeployGateway(ctx context.Context, s GatewaySpec) (*Gateway, error) {
	dc, err := dynamic.NewForConfig(c.config)
	if err != nil {
		return nil, err
	}
	g := &Gateway{Class: s.ClassName, First: podName(RoleBackendA, 0)}
	var pods []*corev1.Pod
	for _, role := range []string{RoleBackendA, RoleBackendB} {
		argv := agentcmd.NameServerCmd{Port: BackendPort}.Argv()
		pods = append(pods, s.pod(role, "backend", argv, BackendPort, ""))
		if err := c.createService(ctx, s, role, BackendPort); err != nil {
			return nil, err
		}
	}
	switch {
	case g.Class == "" && s.Envoy:
		g.Class = s.className("envoy")
		if err := c.createEnvoyClass(ctx, dc, s, g.Class); err != nil {
			return nil, err
		}
	case g.Class == "":
		g.Class = s.className("")
		controller, err := c.deployTraefik(ctx, dc, s, g.Class)
		if err != nil {
			return nil, err
		}
		pods, g.Controller, g.ControllerContainer = append(pods, controller), controller.Name, GatewayContainer
	}
	// The fixture's watch: it also fails early, with the reason, on a pod that cannot start.
	tr, err := c.trackPods(ctx, s.Namespace, LabelRun+"="+s.RunID+","+LabelRole+" in ("+
		strings.Join([]string{RoleGateway, RoleBackendA, RoleBackendB}, ",")+")")
	if err != nil {
		return nil, err
	}
	defer tr.stop()
	if err := c.createPods(ctx, tr, pods); err != nil {
		return nil, err
	}
	if err := c.createRoutes(ctx, dc, s, g.Class); err != nil {
		return nil, err
	}
	if err := tr.waitReady(ctx, names(pods), podReadyTimeout(len(pods))); err != nil {
		return nil, fmt.Errorf("gateway pods: %w", err)
	}
	if err := waitRoutesAccepted(ctx, dc, s); err != nil {
		return nil, err
	}
	if s.Envoy && s.ClassName == "" {
		if g.Controller, err = c.waitEnvoyProxy(ctx, s); err != nil {
			return nil, err
		}
		g.ControllerNamespace, g.ControllerContainer = lab.EnvoyGatewayNamespace, EnvoyContainer
	}
	addr, err := c.gatewayAddress(ctx, dc, s, g)
	if err != nil {
		return nil, err
	}
	g.URL = "http://" + net.JoinHostPort(addr, strconv.Itoa(GatewayPort)) + "/"
	return g, nil
}

// className is the run's GatewayClass of an implementation ("" for Traefik), unique among
// the targets sharing the cluster.
func (s GatewaySpec) className(impl string) string {
	name := "cnibench-" + strings.ToLower(s.RunID)
	for _, part := range []string{impl, s.Variant} {
		if part != "" && !strings.HasSuffix(name, "-"+part) {
			name += "-" + part
		}
	}
	return name
}

// pod is one pod of the split, on the server node, running argv in container name.
func (s GatewaySpec) pod(role, name string, argv []string, port int, account string) *corev1.Pod {
	grace := int64(1)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: podName(role, 0), Namespace: s.Namespace, Labels: s.labels(role)},
		Spec: corev1.PodSpec{NodeName: s.Node, TerminationGracePeriodSeconds: &grace, RestartPolicy: corev1.RestartPolicyAlways,
			AutomountServiceAccountToken: new(bool), ImagePullSecrets: pullSecrets(s.PullSecret),
			Containers: []corev1.Container{{Name: name, Image: s.Image, ImagePullPolicy: corev1.PullIfNotPresent, Command: argv,
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(int32(port))}}, PeriodSeconds: 1}}}},
	}
	if account != "" {
		yes := true
		p.Spec.ServiceAccountName, p.Spec.AutomountServiceAccountToken = account, &yes
	}
	if s.TolerateTaints {
		p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	}
	return p
}

func (s GatewaySpec) labels(role string) map[string]string {
	return map[string]string{LabelManagedBy: managedBy, LabelRun: s.RunID, LabelRole: role, LabelPair: "0"}
}

func (s GatewaySpec) meta(name, role string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: s.Namespace, Labels: s.labels(role)}
}

// createService fronts a role's pod on port.
func (c *Client) createService(ctx context.Context, s GatewaySpec, role string, port int) error {
	svc := &corev1.Service{ObjectMeta: s.meta(podName(role, 0), role), Spec: corev1.ServiceSpec{
		Selector: map[string]string{LabelRun: s.RunID, LabelRole: role},
		Ports:    []corev1.ServicePort{{Name: "http", Port: int32(port), TargetPort: intstr.FromInt32(int32(port))}},
	}}
	if _, err := c.CS.CoreV1().Services(s.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create service %s: %w", svc.Name, err)
	}
	return nil
}

// deployTraefik creates what Traefik needs to serve the run's GatewayClass: its account and
// the cluster-wide read access its provider needs (named after the run, removed by
// DeleteGatewayClass), the class, and its Service; it returns its pod, to be created.
func (c *Client) deployTraefik(ctx context.Context, dc dynamic.Interface, s GatewaySpec, class string) (*corev1.Pod, error) {
	account := podName(RoleGateway, 0)
	sa := &corev1.ServiceAccount{ObjectMeta: s.meta(account, RoleGateway)}
	if _, err := c.CS.CoreV1().ServiceAccounts(s.Namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("create service account %s: %w", account, err)
	}
	clusterMeta := metav1.ObjectMeta{Name: class, Labels: s.labels(RoleGateway)}
	read := []string{"get", "list", "watch"}
	role := &rbacv1.ClusterRole{ObjectMeta: clusterMeta, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"services", "endpoints", "secrets", "namespaces", "nodes", "configmaps"}, Verbs: read},
		{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: read},
		{APIGroups: []string{"gateway.networking.k8s.io"}, Resources: []string{"*"}, Verbs: read},
		{APIGroups: []string{"gateway.networking.k8s.io"}, Resources: []string{"*/status"}, Verbs: []string{"update", "patch"}},
	}}
	if _, err := c.CS.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("create cluster role %s: %w", class, err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: clusterMeta,
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: class},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: account, Namespace: s.Namespace}}}
	if _, err := c.CS.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("create cluster role binding %s: %w", class, err)
	}
	gc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
		"metadata": map[string]any{"name": class, "labels": toAny(s.labels(RoleGateway))},
		"spec":     map[string]any{"controllerName": TraefikController},
	}}
	if _, err := dc.Resource(gvrGatewayClass).Create(ctx, gc, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("create GatewayClass %s (are the Gateway API CRDs installed?): %w", class, err)
	}
	if err := c.createService(ctx, s, RoleGateway, GatewayPort); err != nil {
		return nil, err
	}
	return s.pod(RoleGateway, GatewayContainer, TraefikArgv(s.Namespace), GatewayPort, account), nil
}

// TraefikArgv runs Traefik with only its Gateway API provider (in-cluster credentials from
// its service account), watching the run's namespace, one HTTP entry point on GatewayPort, no
// dashboard, no access log, and no version check or usage report: it reaches nothing outside
// the cluster.
func TraefikArgv(namespace string) []string {
	return []string{"traefik",
		"--global.checkNewVersion=false", "--global.sendAnonymousUsage=false",
		"--entryPoints.web.address=:" + strconv.Itoa(GatewayPort),
		"--providers.kubernetesgateway=true",
		"--providers.kubernetesgateway.namespaces=" + namespace,
		"--log.level=INFO",
	}
}

// createRoutes creates the Gateway and one HTTPRoute per weight.
func (c *Client) createRoutes(ctx context.Context, dc dynamic.Interface, s GatewaySpec, class string) error {
	gw := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
		"metadata": map[string]any{"name": gatewayName, "namespace": s.Namespace, "labels": toAny(s.labels(RoleGateway))},
		"spec": map[string]any{"gatewayClassName": class, "listeners": []any{map[string]any{
			"name": "web", "port": int64(GatewayPort), "protocol": "HTTP",
			"allowedRoutes": map[string]any{"namespaces": map[string]any{"from": "Same"}},
		}}},
	}}
	if _, err := dc.Resource(gvrGateway).Namespace(s.Namespace).Create(ctx, gw, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create Gateway (are the Gateway API CRDs installed?): %w", err)
	}
	for _, w := range s.Weights {
		ref := func(role string, weight int) map[string]any {
			return map[string]any{"name": podName(role, 0), "port": int64(BackendPort), "weight": int64(weight)}
		}
		route := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
			"metadata": map[string]any{"name": fmt.Sprintf("cnibench-w%d", w), "namespace": s.Namespace, "labels": toAny(s.labels(RoleGateway))},
			"spec": map[string]any{
				"parentRefs": []any{map[string]any{"name": gatewayName}},
				"hostnames":  []any{s.Hosts(w)},
				"rules":      []any{map[string]any{"backendRefs": []any{ref(RoleBackendA, w), ref(RoleBackendB, 100-w)}}},
			},
		}}
		if _, err := dc.Resource(gvrHTTPRoute).Namespace(s.Namespace).Create(ctx, route, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create HTTPRoute of weight %d: %w", w, err)
		}
	}
	return nil
}

// waitRoutesAccepted waits until the implementation accepted every route on the Gateway.
func waitRoutesAccepted(ctx context.Context, dc dynamic.Interface, s GatewaySpec) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, w := range s.Weights {
			r, err := dc.Resource(gvrHTTPRoute).Namespace(s.Namespace).Get(ctx, fmt.Sprintf("cnibench-w%d", w), metav1.GetOptions{})
			if err != nil {
				last = err.Error()
				return false, nil
			}
			if ok, why := routeAccepted(r); !ok {
				last = fmt.Sprintf("HTTPRoute cnibench-w%d: %s", w, why)
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("routes not accepted after 2m (%s): %w", last, err)
	}
	return nil
}

// routeAccepted reads a route's parent status: Accepted and ResolvedRefs both true.
func routeAccepted(r *unstructured.Unstructured) (bool, string) {
	parents, _, _ := unstructured.NestedSlice(r.Object, "status", "parents")
	if len(parents) == 0 {
		return false, "no status from the implementation yet"
	}
	p, _ := parents[0].(map[string]any)
	raw, _, _ := unstructured.NestedSlice(p, "conditions")
	var conds []metav1.Condition
	for _, c := range raw {
		m, _ := c.(map[string]any)
		t, _ := m["type"].(string)
		st, _ := m["status"].(string)
		msg, _ := m["message"].(string)
		conds = append(conds, metav1.Condition{Type: t, Status: metav1.ConditionStatus(st), Message: msg})
	}
	for _, t := range []string{"Accepted", "ResolvedRefs"} {
		c := meta.FindStatusCondition(conds, t)
		if c == nil || c.Status != metav1.ConditionTrue {
			if c != nil {
				return false, t + " is " + string(c.Status) + ": " + c.Message
			}
			return false, t + " not reported"
		}
	}
	return true, ""
}

// gatewayAddress is where clients reach the Gateway: the deployed Traefik's Service, or the
// first address the implementation put in the Gateway's status (Envoy Gateway's: its proxy's
// Service).
func (c *Client) gatewayAddress(ctx context.Context, dc dynamic.Interface, s GatewaySpec, g *Gateway) (string, error) {
	if g.ControllerContainer == GatewayContainer {
		svc, err := c.CS.CoreV1().Services(s.Namespace).Get(ctx, podName(RoleGateway, 0), metav1.GetOptions{})
		if err != nil {
			return "", fmt.Errorf("gateway service: %w", err)
		}
		return svc.Spec.ClusterIP, nil
	}
	var addr string
	err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		gw, err := dc.Resource(gvrGateway).Namespace(s.Namespace).Get(ctx, gatewayName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		addrs, _, _ := unstructured.NestedSlice(gw.Object, "status", "addresses")
		if len(addrs) > 0 {
			m, _ := addrs[0].(map[string]any)
			addr, _ = m["value"].(string)
		}
		return addr != "", nil
	})
	if err != nil {
		return "", fmt.Errorf("Gateway of class %s has no address in its status after 2m: %w", g.Class, err)
	}
	return addr, nil
}

// DeleteGateway removes what DeployGateway made for a run beyond its pods and Services: the
// HTTPRoutes, the Gateway and the controller's account in the namespace (a namespace the run
// shares with others keeps living), and the cluster-wide GatewayClass, role and binding.
// Absent objects, or absent Gateway API CRDs, are not errors.
func (c *Client) DeleteGateway(ctx context.Context, namespace, runID string) error {
	sel := metav1.ListOptions{LabelSelector: LabelRun + "=" + runID}
	var errs []error
	if err := c.CS.CoreV1().ServiceAccounts(namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, sel); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("delete service accounts: %w", err))
	}
	if err := c.CS.RbacV1().ClusterRoleBindings().DeleteCollection(ctx, metav1.DeleteOptions{}, sel); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("delete cluster role bindings: %w", err))
	}
	if err := c.CS.RbacV1().ClusterRoles().DeleteCollection(ctx, metav1.DeleteOptions{}, sel); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("delete cluster roles: %w", err))
	}
	dc, err := dynamic.NewForConfig(c.config)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	// The EnvoyProxy last but one: Envoy Gateway removes a Gateway's proxy with the Gateway.
	for _, r := range []dynamic.ResourceInterface{dc.Resource(gvrHTTPRoute).Namespace(namespace), dc.Resource(gvrGateway).Namespace(namespace),
		dc.Resource(gvrEnvoyProxy).Namespace(namespace), dc.Resource(gvrGatewayClass)} {
		if err := r.DeleteCollection(ctx, metav1.DeleteOptions{}, sel); err != nil && !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
			errs = append(errs, fmt.Errorf("delete Gateway API objects: %w", err))
		}
	}
	return errors.Join(errs...)
}

// toAny converts labels for an unstructured object.
func toAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
