package kube

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/cnibench/cnibench/internal/lab"
	"golang.org/x/sync/errgroup"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
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

// LabelEgressGateway marks the node that SNATs the traffic an egress gateway carries; its value
// is the address the external side sees, or "true" for the node's InternalIP.
const LabelEgressGateway = "cnibench.dev/egress-gateway"

// ClientContainer is the container that runs client tools in client pods.
const ClientContainer = "client"

// LabelPair numbers the client/server pair a pod belongs to, from 0.
const LabelPair = "cnibench.dev/pair"

// Server is one long-running server process; each runs in a container of its own.
type Server struct {
	Name string   // container name
	Argv []string // command
	Port int      // TCP (and UDP) port it listens on
	// DataPort is a second port, TCP and UDP, for data connections (netperf's), 0: none. It
	// is Port+1, which the runner keeps for it.
	DataPort int
}

// FixtureSpec is everything a run deploys into one cluster.
type FixtureSpec struct {
	Namespace    string
	RunID        string
	Image        string
	PullSecret   string // a Secret in Namespace the nodes pull Image with; empty: none
	RuntimeClass string // empty: the cluster's default handler
	// Family is the IP family of the run's traffic (lab.IPv4, lab.IPv6): its Services take
	// that family alone and PodIP returns addresses of it. Empty: the cluster's primary one.
	Family    string
	Placement Placement
	// Servers holds the server containers of each pair's server pods, one list per pair: a
	// run deploys as many pairs as its largest concurrency level. Host-network pairs share
	// their node's ports, so each listens on ports of its own (ServersOf); pod-network
	// servers all use the first pair's.
	Servers        [][]Server
	Roles          []string // the pods the run's paths need, one of each per pair
	TolerateTaints bool
	// Levels are the pair counts the pods are brought up in, ascending: the pods of pairs
	// [previous level, level) are created at once and awaited before the next level's, so
	// that pod startup is timed at every concurrency the run measures. Empty: one level.
	Levels []int
	// OnStage, when set, is told of each level as its pods are up: a hundred pairs take a
	// minute to come up.
	OnStage func(Stage)
	// Up is the pairs Deploy brings up, the last level; 0: every pair. A run whose pods live
	// per round deploys one pair and scales the fixture (Client.Scale) afterwards.
	Up int
	// Sysctls are set in the network namespace of every pod not on the host network (a
	// tuning profile's), beside the fixture's own.
	Sysctls map[string]string
	// NetAdmin gives the containers of every pod not on the host network CAP_NET_ADMIN in
	// their own network namespace, for a tuning profile's offloads on the pod's interface.
	NetAdmin bool
	// NodeProbe asks for the host-network pods of Client.ProbeNodes, which only read: a
	// namespace the run creates is then labelled for them.
	NodeProbe bool
	// Secondary is the network attachment (namespace/name of a NetworkAttachmentDefinition)
	// every pod not on the host network asks for beside the cluster network: the secondary
	// path's. Empty: none.
	Secondary string
}

// stages returns the pair counts the pods come up in, ending with Up (every pair by default).
func (s FixtureSpec) stages() []int {
	up := s.Pairs()
	if s.Up > 0 {
		up = min(s.Up, up)
	}
	levels := slices.Clone(s.Levels)
	slices.Sort(levels)
	var out []int
	for _, l := range levels {
		if l > 0 && l < up && (len(out) == 0 || l > out[len(out)-1]) {
			out = append(out, l)
		}
	}
	return append(out, up)
}

// Pairs is the number of client/server pairs the spec deploys.
func (s FixtureSpec) Pairs() int { return len(s.Servers) }

// ServersOf is the server containers of a role's pod in a pair.
func (s FixtureSpec) ServersOf(role string, pair int) []Server {
	if role == RoleHostServer {
		return s.Servers[pair]
	}
	return s.Servers[0]
}

// Fixture is a deployed FixtureSpec with the addresses the paths use.
type Fixture struct {
	Spec FixtureSpec
	Pods map[string][]*corev1.Pod // by role, then pair
	// ServiceIPs are the ClusterIPs of each pair's Service, which fronts its server-b.
	ServiceIPs []string
	// Startup is how long the pods took to come up, level by level, from the watch.
	Startup []Stage
}

// Pod returns the pod of a role in a pair, nil when the run has none.
func (f *Fixture) Pod(role string, pair int) *corev1.Pod {
	if pods := f.Pods[role]; pair < len(pods) {
		return pods[pair]
	}
	return nil
}

// PodIP is the address of pair's pod of a role in the fixture's family: the pod's first of
// that family, its primary one when the fixture names none; "" when it has none.
func (f *Fixture) PodIP(role string, pair int) string {
	p := f.Pod(role, pair)
	if p == nil {
		return ""
	}
	return podIPOf(p, f.Spec.Family)
}

// podIPOf is a pod's first address of a family ("": its primary one). A host-network pod's
// addresses are its node's.
func podIPOf(p *corev1.Pod, family string) string {
	if family == "" {
		return p.Status.PodIP
	}
	for _, a := range p.Status.PodIPs {
		if FamilyOf(a.IP) == family {
			return a.IP
		}
	}
	return ""
}

// Has reports whether the fixture has pods of a role.
func (f *Fixture) Has(role string) bool { return len(f.Pods[role]) > 0 }

// podCreators bounds concurrent pod creates: a burst of a hundred pods goes out in parallel
// without pushing a small API server into throttling.
const podCreators = 16

// Deploy creates the namespace, pods and Services and waits until every server listens. The
// pods come up level by level (FixtureSpec.Levels): the first level's on a quiet cluster, each
// further level's as one burst. A watch records when each pod became Running and Ready.
func (c *Client) Deploy(ctx context.Context, spec FixtureSpec, createNamespace bool) (*Fixture, error) {
	if createNamespace {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: spec.Namespace, Labels: spec.namespaceLabels()}}
		if _, err := c.CS.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("create namespace %s: %w", spec.Namespace, err)
		}
	}
	f := &Fixture{Spec: spec, Pods: map[string][]*corev1.Pod{}, ServiceIPs: make([]string, spec.Pairs())}
	for _, level := range spec.stages() {
		st, err := c.Scale(ctx, f, level)
		if err != nil {
			return nil, err
		}
		f.Startup = append(f.Startup, st)
		if spec.OnStage != nil {
			spec.OnStage(st)
		}
	}
	return f, nil
}

// podReadyTimeout allows a burst of pods more time than one.
func podReadyTimeout(pods int) time.Duration { return 3*time.Minute + time.Duration(pods)*time.Second }

// createPods creates pods concurrently, noting each one's create time in the tracker.
func (c *Client) createPods(ctx context.Context, tr *podTracker, pods []*corev1.Pod) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(podCreators)
	for _, pod := range pods {
		g.Go(func() error {
			tr.created(pod.Name, time.Now())
			if _, err := c.CS.CoreV1().Pods(pod.Namespace).Create(gctx, pod, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("create pod %s: %w", pod.Name, err)
			}
			return nil
		})
	}
	return g.Wait()
}

func names(pods []*corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return out
}

// podsOf builds the pods of pairs [from, to), every role of a pair together.
func (s FixtureSpec) podsOf(from, to int) []*corev1.Pod {
	var out []*corev1.Pod
	for i := from; i < to; i++ {
		for _, role := range s.Roles {
			out = append(out, s.pod(role, i))
		}
	}
	return out
}

func (s FixtureSpec) has(role string) bool {
	for _, r := range s.Roles {
		if r == role {
			return true
		}
	}
	return false
}

func podName(role string, pair int) string { return fmt.Sprintf("cnibench-%s-%d", role, pair) }

// node places a role's pod of a pair. On two nodes clients (and same-node servers) go to the
// first, remote servers to the second; on more, pairs spread round-robin, each remote server
// on the node after its client's.
func (s FixtureSpec) node(role string, pair int) string {
	nodes := s.Placement.all()
	remote := role == RoleServerB || role == RoleHostServer
	if len(nodes) <= 2 {
		if remote {
			return nodes[len(nodes)-1]
		}
		return nodes[0]
	}
	if remote {
		return nodes[(pair+1)%len(nodes)]
	}
	return nodes[pair%len(nodes)]
}

// clientIdle is the client container's main process, which the tools run beside.
func clientIdle() []string { return []string{"sleep", "infinity"} }

// exitOnTerm makes a container's command leave at SIGTERM. As PID 1, sleep and sockperf's
// server ignore it and held every deletion of their pods for the grace period (2.9 and 3.2 s
// a pod, against 1.0 s for iperf3 or the agent's echo server, measured on a bridge cluster):
// a shell, PID 1 in their stead, exits on it, and the kernel then ends its child with the
// PID namespace. The child's exit status stays the container's.
func exitOnTerm(argv []string) []string {
	if len(argv) == 0 || (argv[0] != "sleep" && argv[0] != "sockperf") {
		return argv
	}
	return append([]string{"sh", "-c", `trap "exit 0" TERM; "$@" & wait $!`, argv[0]}, argv...)
}

// podSkeleton is what every pod of the fixture shares: the run's labels with its role, its
// node, its grace period and restart policy, no service account token, the pull Secret and,
// when asked, every toleration.
func (s FixtureSpec) podSkeleton(name, role, node string, grace int64, restart corev1.RestartPolicy) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.Namespace,
			Labels: map[string]string{LabelManagedBy: managedBy, LabelRun: s.RunID, LabelRole: role}},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: &grace,
			RestartPolicy:                 restart,
			AutomountServiceAccountToken:  new(bool),
			ImagePullSecrets:              pullSecrets(s.PullSecret),
		},
	}
	if s.TolerateTaints {
		p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	}
	return p
}

// pod builds the pod of a role in a pair.
func (s FixtureSpec) pod(role string, pair int) *corev1.Pod {
	p := s.podSkeleton(podName(role, pair), role, s.node(role, pair), 1, corev1.RestartPolicyAlways)
	p.Labels[LabelPair] = strconv.Itoa(pair)
	if s.RuntimeClass != "" {
		p.Spec.RuntimeClassName = &s.RuntimeClass
	}
	if role == RoleHostClient || role == RoleHostServer {
		p.Spec.HostNetwork = true
		p.Spec.DNSPolicy = corev1.DNSClusterFirstWithHostNet
	} else {
		// CRR leaves a TIME_WAIT socket per connection on the client: the widest range of the
		// safe (namespaced, allowed by default) port sysctl postpones port exhaustion. Host-network
		// pods keep the node's setting, which is not ours to change.
		sysctls := []corev1.Sysctl{{Name: "net.ipv4.ip_local_port_range", Value: "1024 65535"}}
		for _, k := range slices.Sorted(maps.Keys(s.Sysctls)) {
			sysctls = append(sysctls, corev1.Sysctl{Name: k, Value: s.Sysctls[k]})
		}
		p.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: sysctls}
	}
	s.attachSecondary(p)
	isServer := role == RoleServerA || role == RoleServerB || role == RoleHostServer || role == RoleLocal
	if isServer {
		for _, srv := range s.ServersOf(role, pair) {
			p.Spec.Containers = append(p.Spec.Containers, s.container(srv.Name, srv.Argv, srv.Port))
		}
	}
	if !isServer || role == RoleLocal {
		p.Spec.Containers = append(p.Spec.Containers, s.container(ClientContainer, clientIdle(), 0))
	}
	if s.NetAdmin && !p.Spec.HostNetwork {
		for i := range p.Spec.Containers {
			p.Spec.Containers[i].SecurityContext = &corev1.SecurityContext{
				Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}}}
		}
	}
	return p
}

// serverStartSeconds is how long a server container may take to listen before the kubelet
// restarts it (a gVisor sandbox on a busy node takes seconds).
const serverStartSeconds = 120

func (s FixtureSpec) container(name string, argv []string, port int) corev1.Container {
	c := corev1.Container{Name: name, Image: s.Image, ImagePullPolicy: corev1.PullIfNotPresent, Command: exitOnTerm(argv)}
	if port > 0 {
		// Ready means listening: the first sample must not race the server's start. A startup
		// probe, not a readiness probe: probing stops once the server listens, where a
		// readiness probe would connect every second for the pod's life, on the measured path
		// and, to iperf3, as a test it refuses while one runs.
		c.StartupProbe = &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(int32(port))}},
			PeriodSeconds:    1,
			FailureThreshold: serverStartSeconds,
		}
	}
	return c
}

// ServiceName names the Service of a pair.
func ServiceName(pair int) string { return fmt.Sprintf("cnibench-server-b-%d", pair) }

// service fronts a pair's server-b on every server port, TCP and UDP (iperf3 UDP uses both).
func (s FixtureSpec) service(pair int) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: ServiceName(pair), Namespace: s.Namespace,
			Labels: map[string]string{LabelManagedBy: managedBy, LabelRun: s.RunID}},
		Spec: corev1.ServiceSpec{Selector: map[string]string{LabelRun: s.RunID, LabelRole: RoleServerB, LabelPair: strconv.Itoa(pair)}},
	}
	s.setFamily(&svc.Spec)
	for _, srv := range s.ServersOf(RoleServerB, pair) {
		for _, port := range []int{srv.Port, srv.DataPort} {
			for _, proto := range []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP} {
				if port == 0 {
					continue
				}
				svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{
					Name: fmt.Sprintf("p%d-%s", port, map[corev1.Protocol]string{corev1.ProtocolTCP: "tcp", corev1.ProtocolUDP: "udp"}[proto]),
					Port: int32(port), TargetPort: intstr.FromInt32(int32(port)), Protocol: proto,
				})
			}
		}
	}
	return svc
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
			case "ErrImagePull", "ImagePullBackOff":
				return fmt.Sprintf("container %s: %s: %s (image %s: the nodes must reach its registry; one that asks for credentials needs --image-pull-secret)", cs.Name, w.Reason, w.Message, cs.Image)
			case "ErrImageNeverPull", "InvalidImageName", "CreateContainerConfigError":
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

// teardownWait bounds the wait for a run's objects to go. A slow machine (a nested VM
// without hardware virtualisation) needs minutes to stop a namespace's pods.
const teardownWait = 5 * time.Minute

// Teardown deletes the run's namespace (or, in a namespace the run did not create, its
// labelled objects) and waits until they are gone. Calls that fail for a reason that passes (an
// API server away for a while) are made again. A namespace that cannot go by itself (objects
// held by finalizers nobody removes) is given finalizerWait, then named with what holds it in
// a *StuckNamespaceError.
func (c *Client) Teardown(ctx context.Context, namespace, runID string, ownNamespace bool) error {
	sel := LabelRun + "=" + runID
	if !ownNamespace {
		if err := retryAPI(ctx, func() error { return c.deleteLabelled(ctx, namespace, sel) }); err != nil {
			return fmt.Errorf("run %s: %w", runID, err)
		}
	} else {
		// The pods go first and at once: the namespace controller would otherwise stop them
		// only after discovering every resource type, which a slow control plane drags out.
		grace := int64(0)
		err := retryAPI(ctx, func() error {
			return c.CS.CoreV1().Pods(namespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &grace},
				metav1.ListOptions{LabelSelector: sel})
		})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete pods of run %s: %w", runID, err)
		}
		err = retryAPI(ctx, func() error { return c.CS.CoreV1().Namespaces().Delete(ctx, namespace, metav1.DeleteOptions{}) })
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete namespace %s: %w", namespace, err)
		}
	}
	return c.awaitTeardown(ctx, namespace, runID, ownNamespace)
}

// awaitTeardown waits until the run's pods, and with ownNamespace its namespace, are gone.
func (c *Client) awaitTeardown(ctx context.Context, namespace, runID string, ownNamespace bool) error {
	sel := LabelRun + "=" + runID
	left, why := "objects", ""
	var blockedSince time.Time
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, teardownWait, true, func(ctx context.Context) (bool, error) {
		pods, err := c.CS.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err == nil {
			left = fmt.Sprintf("%d pods", len(pods.Items))
		}
		if !ownNamespace {
			return err == nil && len(pods.Items) == 0, nil
		}
		ns, err := c.CS.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, nil
		}
		if left == "0 pods" {
			left = "the namespace (pods gone)"
		}
		if why = blocked(ns); why == "" {
			blockedSince = time.Time{}
			return false, nil
		}
		if blockedSince.IsZero() {
			blockedSince = time.Now()
		}
		if time.Since(blockedSince) >= finalizerWait {
			return false, errBlocked
		}
		return false, nil
	})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errBlocked):
		return c.stuckNamespace(ctx, namespace, why)
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return fmt.Errorf("%s of run %s still present after %s in namespace %s", left, runID, teardownWait, namespace)
}

// deleteLabelled deletes a run's Services, NetworkPolicies and pods in a namespace the run
// shares with others.
func (c *Client) deleteLabelled(ctx context.Context, namespace, sel string) error {
	// Services have no delete-collection verb.
	svcs, err := c.CS.CoreV1().Services(namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return fmt.Errorf("list services: %w", err)
	}
	for _, svc := range svcs.Items {
		if err := c.CS.CoreV1().Services(namespace).Delete(ctx, svc.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete service %s: %w", svc.Name, err)
		}
	}
	// Forbidden: credentials without the policy permissions (cnibench rbac without
	// --network-policies), which preflight demands of a run with policies: none were made.
	if err := c.CS.NetworkingV1().NetworkPolicies(namespace).DeleteCollection(ctx, metav1.DeleteOptions{},
		metav1.ListOptions{LabelSelector: sel}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) {
		return fmt.Errorf("delete network policies: %w", err)
	}
	grace := int64(0)
	if err := c.CS.CoreV1().Pods(namespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &grace},
		metav1.ListOptions{LabelSelector: sel}); err != nil {
		return fmt.Errorf("delete pods: %w", err)
	}
	return nil
}

// pullSecrets is a pod's imagePullSecrets for the Secret named name, or none.
func pullSecrets(name string) []corev1.LocalObjectReference {
	if name == "" {
		return nil
	}
	return []corev1.LocalObjectReference{{Name: name}}
}

// setFamily makes a Service single-stack in the fixture's family, if it names one.
func (s FixtureSpec) setFamily(spec *corev1.ServiceSpec) {
	if s.Family == "" {
		return
	}
	single, family := corev1.IPFamilyPolicySingleStack, corev1.IPv4Protocol
	if s.Family == lab.IPv6 {
		family = corev1.IPv6Protocol
	}
	spec.IPFamilyPolicy, spec.IPFamilies = &single, []corev1.IPFamily{family}
}
