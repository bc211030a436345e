package kube

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Labels on every object a run creates, so that a run's leftovers can always be found.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelRun       = "cnibench.dev/run"
	LabelRole      = "cnibench.dev/role"
	managedBy      = "cnibench"
)

// Pod roles.
const (
	RoleClient     = "client"      // pod network, node A
	RoleServerA    = "server-a"    // pod network, node A
	RoleServerB    = "server-b"    // pod network, node B; also behind the Service
	RoleHostClient = "host-client" // host network, node A
	RoleHostServer = "host-server" // host network, node B
	RoleLocal      = "local"       // client and servers in one pod, node A
)

// ClientContainer is the container that runs client tools in client pods.
const ClientContainer = "client"

// Server is one long-running server process; each runs in a container of its own.
type Server struct {
	Name string   // container name
	Argv []string // command
	Port int      // TCP (and UDP) port it listens on
}

// FixtureSpec is everything a run deploys into one cluster.
type FixtureSpec struct {
	Namespace      string
	RunID          string
	Image          string
	RuntimeClass   string // empty: the cluster's default handler
	Placement      Placement
	Servers        []Server
	Roles          []string // the pods the run's paths need
	TolerateTaints bool
}

// Fixture is a deployed FixtureSpec with the addresses the paths use.
type Fixture struct {
	Spec      FixtureSpec
	Pods      map[string]*corev1.Pod // by role
	ServiceIP string
}

// Deploy creates the namespace, pods and Service and waits until every server listens.
func (c *Client) Deploy(ctx context.Context, spec FixtureSpec, createNamespace bool) (*Fixture, error) {
	labels := map[string]string{LabelManagedBy: managedBy, LabelRun: spec.RunID}
	if createNamespace {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: spec.Namespace, Labels: labels}}
		if _, err := c.CS.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("create namespace %s: %w", spec.Namespace, err)
		}
	}
	f := &Fixture{Spec: spec, Pods: map[string]*corev1.Pod{}}
	for _, role := range spec.Roles {
		pod := spec.pod(role)
		if _, err := c.CS.CoreV1().Pods(spec.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("create pod %s: %w", pod.Name, err)
		}
	}
	if spec.has(RoleServerB) {
		svc, err := c.CS.CoreV1().Services(spec.Namespace).Create(ctx, spec.service(), metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("create service: %w", err)
		}
		f.ServiceIP = svc.Spec.ClusterIP
	}
	for _, role := range spec.Roles {
		p, err := c.waitReady(ctx, spec.Namespace, podName(role), 3*time.Minute)
		if err != nil {
			return nil, err
		}
		f.Pods[role] = p
	}
	return f, nil
}

func (s FixtureSpec) has(role string) bool {
	for _, r := range s.Roles {
		if r == role {
			return true
		}
	}
	return false
}

func podName(role string) string { return "cnibench-" + role }

// pod builds the pod of a role.
func (s FixtureSpec) pod(role string) *corev1.Pod {
	grace := int64(1)
	node := s.Placement.NodeA
	if role == RoleServerB || role == RoleHostServer {
		node = s.Placement.NodeB
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: podName(role), Namespace: s.Namespace,
			Labels: map[string]string{LabelManagedBy: managedBy, LabelRun: s.RunID, LabelRole: role}},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: &grace,
			RestartPolicy:                 corev1.RestartPolicyAlways,
			AutomountServiceAccountToken:  new(bool),
		},
	}
	if s.RuntimeClass != "" {
		p.Spec.RuntimeClassName = &s.RuntimeClass
	}
	if s.TolerateTaints {
		p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	}
	if role == RoleHostClient || role == RoleHostServer {
		p.Spec.HostNetwork = true
		p.Spec.DNSPolicy = corev1.DNSClusterFirstWithHostNet
	} else {
		// CRR leaves a TIME_WAIT socket per connection on the client: the widest range of the
		// safe (namespaced, allowed by default) port sysctl postpones port exhaustion. Host-network
		// pods keep the node's setting, which is not ours to change.
		p.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "net.ipv4.ip_local_port_range", Value: "1024 65535"}}}
	}
	isServer := role == RoleServerA || role == RoleServerB || role == RoleHostServer || role == RoleLocal
	if isServer {
		for _, srv := range s.Servers {
			p.Spec.Containers = append(p.Spec.Containers, s.container(srv.Name, srv.Argv, srv.Port))
		}
	}
	if !isServer || role == RoleLocal {
		p.Spec.Containers = append(p.Spec.Containers, s.container(ClientContainer, []string{"sleep", "infinity"}, 0))
	}
	return p
}

func (s FixtureSpec) container(name string, argv []string, port int) corev1.Container {
	c := corev1.Container{Name: name, Image: s.Image, ImagePullPolicy: corev1.PullIfNotPresent, Command: argv}
	if port > 0 {
		// Ready means listening: the first sample must not race the server's start.
		c.ReadinessProbe = &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(int32(port))}},
			PeriodSeconds: 1,
		}
	}
	return c
}

// service fronts server-b on every server port, TCP and UDP (iperf3 UDP uses both).
func (s FixtureSpec) service() *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "cnibench-server-b", Namespace: s.Namespace,
			Labels: map[string]string{LabelManagedBy: managedBy, LabelRun: s.RunID}},
		Spec: corev1.ServiceSpec{Selector: map[string]string{LabelRun: s.RunID, LabelRole: RoleServerB}},
	}
	for _, srv := range s.Servers {
		for _, proto := range []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP} {
			svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{
				Name: fmt.Sprintf("p%d-%s", srv.Port, map[corev1.Protocol]string{corev1.ProtocolTCP: "tcp", corev1.ProtocolUDP: "udp"}[proto]),
				Port: int32(srv.Port), TargetPort: intstr.FromInt32(int32(srv.Port)), Protocol: proto,
			})
		}
	}
	return svc
}

// waitReady waits until a pod is Ready, failing early on errors that will not heal.
func (c *Client) waitReady(ctx context.Context, ns, name string, timeout time.Duration) (*corev1.Pod, error) {
	deadline := time.Now().Add(timeout)
	var last *corev1.Pod
	for {
		p, err := c.CS.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			last = p
			if podReady(p) {
				return p, nil
			}
			if why := stuck(p); why != "" {
				return nil, fmt.Errorf("pod %s on %s cannot start: %s", name, p.Spec.NodeName, why)
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("pod %s not ready after %s: %s", name, timeout, describe(last))
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return p.Status.PodIP != ""
		}
	}
	return false
}

// stuck recognises waiting reasons that retrying will not fix.
func stuck(p *corev1.Pod) string {
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			switch w.Reason {
			case "ErrImageNeverPull", "InvalidImageName", "ImagePullBackOff", "ErrImagePull", "CreateContainerConfigError":
				return fmt.Sprintf("container %s: %s: %s (image %s; remote clusters need --image)", cs.Name, w.Reason, w.Message, cs.Image)
			case "CrashLoopBackOff":
				return fmt.Sprintf("container %s keeps crashing: %s", cs.Name, w.Message)
			}
		}
	}
	return ""
}

func describe(p *corev1.Pod) string {
	if p == nil {
		return "never seen"
	}
	s := string(p.Status.Phase)
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue && c.Message != "" {
			s += "; " + c.Message
		}
	}
	return s
}

// Teardown deletes the run's namespace (or, in a namespace the run did not create, its
// labelled objects) and waits until they are gone.
func (c *Client) Teardown(ctx context.Context, namespace, runID string, ownNamespace bool) error {
	sel := LabelRun + "=" + runID
	if ownNamespace {
		err := c.CS.CoreV1().Namespaces().Delete(ctx, namespace, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete namespace %s: %w", namespace, err)
		}
	} else {
		if err := c.CS.CoreV1().Services(namespace).Delete(ctx, "cnibench-server-b", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete service: %w", err)
		}
		if err := c.CS.NetworkingV1().NetworkPolicies(namespace).DeleteCollection(ctx, metav1.DeleteOptions{},
			metav1.ListOptions{LabelSelector: sel}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete network policies of run %s: %w", runID, err)
		}
		grace := int64(0)
		if err := c.CS.CoreV1().Pods(namespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &grace},
			metav1.ListOptions{LabelSelector: sel}); err != nil {
			return fmt.Errorf("delete pods of run %s: %w", runID, err)
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		pods, err := c.CS.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
		gone := err == nil && len(pods.Items) == 0
		if ownNamespace {
			_, err := c.CS.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
			gone = apierrors.IsNotFound(err)
		}
		if gone {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return errors.New("objects of run " + runID + " still present after 2m in namespace " + namespace)
}
