package kube

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"golang.org/x/sync/errgroup"
)

// LabelUnrelated selects the pods of an unrelated policy; no pod carries it.
const LabelUnrelated = "cnibench.dev/unrelated"

// PolicySpec is the NetworkPolicy state a target is measured under.
type PolicySpec struct {
	Namespace, RunID string
	// Allow creates a policy that selects the server pods and admits the client pod on Ports.
	Allow bool
	Ports []int // server ports, opened for TCP and UDP (iperf3 UDP uses both)
	// Extra creates this many policies that select pods which do not exist.
	Extra int
}

// AllowPolicyName names the allow policy.
const AllowPolicyName = "cnibench-allow-client"

// policyCreators bounds concurrent creates: a thousand policies take seconds, not minutes,
// without pushing a small API server into throttling.
const policyCreators = 8

// ApplyPolicies creates the spec's policies, the unrelated ones first, so that the allow
// policy's enforcement, which the caller verifies, comes last. progress, called from several
// goroutines, is told every hundred creates.
func (c *Client) ApplyPolicies(ctx context.Context, spec PolicySpec, progress func(done int)) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(policyCreators)
	var created atomic.Int64
	for i := 0; i < spec.Extra; i++ {
		np := spec.unrelated(i)
		g.Go(func() error {
			if _, err := c.CS.NetworkingV1().NetworkPolicies(spec.Namespace).Create(gctx, np, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("create network policy %s: %w", np.Name, err)
			}
			if n := created.Add(1); n%100 == 0 && progress != nil {
				progress(int(n))
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if spec.Allow {
		if _, err := c.CS.NetworkingV1().NetworkPolicies(spec.Namespace).Create(ctx, spec.allow(), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create network policy %s: %w", AllowPolicyName, err)
		}
	}
	return nil
}

func (s PolicySpec) meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: s.Namespace,
		Labels: map[string]string{LabelManagedBy: managedBy, LabelRun: s.RunID}}
}

// allow selects the run's pod-network servers and admits ingress only from its client pod on
// the server ports: every measured packet to a server passes a policy verdict, and anything
// else to them is dropped, which is how enforcement is verified.
func (s PolicySpec) allow() *networkingv1.NetworkPolicy {
	var ports []networkingv1.NetworkPolicyPort
	for _, p := range s.Ports {
		for _, proto := range []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP} {
			port := intstr.FromInt32(int32(p))
			ports = append(ports, networkingv1.NetworkPolicyPort{Protocol: &proto, Port: &port})
		}
	}
	return &networkingv1.NetworkPolicy{
		ObjectMeta: s.meta(AllowPolicyName),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{
				MatchLabels: map[string]string{LabelRun: s.RunID},
				MatchExpressions: []metav1.LabelSelectorRequirement{{
					Key: LabelRole, Operator: metav1.LabelSelectorOpIn, Values: []string{RoleServerA, RoleServerB},
				}},
			},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From:  []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelRun: s.RunID, LabelRole: RoleClient}}}},
				Ports: ports,
			}},
		},
	}
}

// unrelated is the i-th extra policy: the shape of a typical application policy (one selected
// group, one admitted peer group, one port), for pods that do not exist, so that it adds to
// the cluster's policy count without changing what the measured pods may do.
func (s PolicySpec) unrelated(i int) *networkingv1.NetworkPolicy {
	app := "u" + strconv.Itoa(i)
	port := intstr.FromInt32(int32(10000 + i%50000))
	proto := corev1.ProtocolTCP
	return &networkingv1.NetworkPolicy{
		ObjectMeta: s.meta(fmt.Sprintf("cnibench-unrelated-%d", i)),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{LabelUnrelated: app}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From:  []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelUnrelated: app + "-peer"}}}},
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: &proto, Port: &port}},
			}},
		},
	}
}
