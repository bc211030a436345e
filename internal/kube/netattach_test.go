package kube

import (
	"context"
	"strings"
	"testing"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	nadfake "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/client/clientset/versioned/fake"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// macvlanWhereabouts is a NetworkAttachmentDefinition's config that gives pods addresses
// across the cluster.
const macvlanWhereabouts = `{"cniVersion": "0.4.0", "type": "macvlan", "master": "eth0", "mode": "bridge",
 "ipam": {"type": "whereabouts", "range": "192.168.2.0/24"}}`

// nadCluster is a fake cluster that serves NetworkAttachmentDefinitions (multus false: it
// does not) holding the given ones, keyed namespace/name with their configs.
func nadCluster(t *testing.T, multus bool, nads map[string]string, annotations map[string]string) *Client {
	t.Helper()
	cs := fake.NewClientset()
	if multus {
		cs.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{{GroupVersion: nadGroupVersion,
			APIResources: []metav1.APIResource{{Name: nadResource, Namespaced: true, Kind: "NetworkAttachmentDefinition"}}}}
	}
	nc := nadfake.NewSimpleClientset()
	for key, config := range nads {
		ns, name, _ := strings.Cut(key, "/")
		nad := &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: annotations},
			Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: config}}
		// Created, not handed to the constructor: its tracker would file them under a
		// resource guessed from the kind (networkattachmentdefinitions), which gets never find.
		if _, err := nc.K8sCniCncfIoV1().NetworkAttachmentDefinitions(ns).Create(context.Background(), nad, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return &Client{CS: cs, NADs: nc, Server: "https://10.0.0.1:6443"}
}

// TestNetworkAttachmentPreflight: each way a run's pods would get no address on the named
// network is one line naming the setting and what was expected; a network they would get one
// on passes with what the fingerprint records of it.
func TestNetworkAttachmentPreflight(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name, network string
		multus        bool
		config        string // of the network in the cluster; "-": it is absent
		annotations   map[string]string
		want          string // in the error; "" passes
		fact          string // the attachment, as the fingerprint records it
	}{
		{name: "in the run's namespace", network: "bench/mv", multus: true, config: macvlanWhereabouts, fact: "bench/mv: macvlan, ipam whereabouts"},
		{name: "in default", network: "default/mv", multus: true, config: macvlanWhereabouts, fact: "default/mv: macvlan, ipam whereabouts"},
		{name: "no Multus", network: "bench/mv", config: "-",
			want: `secondaryNetwork: "bench/mv": the cluster at https://10.0.0.1:6443 has no Multus: it serves no NetworkAttachmentDefinitions (CRD network-attachment-definitions.k8s.cni.cncf.io absent)`},
		{name: "no such network", network: "bench/mv", multus: true, config: "-",
			want: `secondaryNetwork: "bench/mv": no NetworkAttachmentDefinition mv in namespace bench on https://10.0.0.1:6443`},
		{name: "another namespace", network: "kube-system/mv", multus: true, config: macvlanWhereabouts,
			want: `secondaryNetwork: "kube-system/mv": the run's pods are in namespace bench, and Multus gives a pod another namespace's NetworkAttachmentDefinition only`},
		{name: "no IPAM", network: "bench/mv", multus: true, config: `{"cniVersion": "0.4.0", "type": "macvlan", "master": "eth0"}`,
			want: `secondaryNetwork: "bench/mv": its config (macvlan) has no IPAM that gives pods addresses, so the run's pods would get none`},
		{name: "static IPAM without addresses", network: "bench/mv", multus: true, config: `{"type": "macvlan", "ipam": {"type": "static"}}`,
			want: `its config (macvlan) has no IPAM that gives pods addresses`},
		{name: "a list whose first plugin has the IPAM", network: "bench/mv", multus: true,
			config: `{"cniVersion": "1.0.0", "plugins": [{"type": "bridge", "ipam": {"type": "host-local", "subnet": "10.1.0.0/24"}}, {"type": "tuning"}]}`,
			fact:   "bench/mv: bridge, tuning, ipam host-local"},
		{name: "OVN-Kubernetes' own subnets", network: "bench/l2", multus: true,
			config: `{"type": "ovn-k8s-cni-overlay", "topology": "layer2", "subnets": "10.100.200.0/24"}`,
			fact:   "bench/l2: ovn-k8s-cni-overlay, ipam ovn-k8s-cni-overlay subnets 10.100.200.0/24"},
		{name: "config on the nodes", network: "default/cnb-secondary", multus: true, config: "",
			fact: "default/cnb-secondary: config on the nodes (the file of its name in Multus' confDir)"},
		{name: "not JSON", network: "bench/mv", multus: true, config: `{"type": macvlan}`, want: `its spec.config is not a CNI config (JSON)`},
		{name: "a device plugin's device", network: "bench/sriov", multus: true, config: macvlanWhereabouts,
			annotations: map[string]string{annotationResourceName: "intel.com/sriov"},
			want:        `it attaches a device plugin's device (k8s.v1.cni.cncf.io/resourceName: intel.com/sriov), which the run's pods do not request`},
	} {
		t.Run(c.name, func(t *testing.T) {
			nads := map[string]string{}
			if c.config != "-" {
				nads[c.network] = c.config
			}
			a, err := nadCluster(t, c.multus, nads, c.annotations).CheckNetworkAttachment(ctx, c.network, "bench")
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want == "" && a.String() != c.fact:
				t.Errorf("attachment %q, want %q", a, c.fact)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("error %v, want %q in it", err, c.want)
			case c.want != "" && strings.Contains(err.Error(), "\n"):
				t.Errorf("error of several lines: %q", err)
			}
		})
	}
}

// TestNetworkAttachmentForbidden: credentials that may not read the network are told the
// permission and the command that prints it.
func TestNetworkAttachmentForbidden(t *testing.T) {
	c := nadCluster(t, true, map[string]string{"bench/mv": macvlanWhereabouts}, nil)
	nc := c.NADs.(*nadfake.Clientset)
	nc.PrependReactor("get", nadResource, func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: nadGroup, Resource: nadResource}, "mv", nil)
	})
	_, err := c.CheckNetworkAttachment(context.Background(), "bench/mv", "bench")
	want := `secondaryNetwork: "bench/mv": missing RBAC permission on https://10.0.0.1:6443: get network-attachment-definitions in namespace bench (cnibench rbac --secondary-network prints the rule)`
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}

// TestAccessReadsTheNetworkAttachment: `cnibench rbac` grants get on the one network, in the
// run's Role when it is in the run's namespace and by name cluster-wide otherwise, and the
// preflight reviews it in the network's own namespace.
func TestAccessReadsTheNetworkAttachment(t *testing.T) {
	for _, c := range []struct {
		a       Access
		inRole  bool
		reviewN string
	}{
		{Access{Namespace: "bench", SecondaryNetwork: "bench/mv"}, true, "bench"},
		{Access{Namespace: "bench", SecondaryNetwork: "default/mv"}, false, "default"},
		{Access{Namespace: "cnibench-x", OwnNamespace: true, SecondaryNetwork: "default/mv"}, false, "default"},
	} {
		namespaced, cluster := c.a.Rules()
		rules := cluster
		if c.inRole {
			rules = namespaced
		}
		if !grants(rules, nadResource, "get") || rules[len(rules)-1].ResourceNames[0] != "mv" {
			t.Errorf("%+v: rules %+v, want get on network-attachment-definitions named mv there", c.a, rules)
		}
		reviewed := false
		for _, ra := range c.a.reviews() {
			if ra.Resource == nadResource {
				reviewed = ra.Namespace == c.reviewN && ra.Name == "mv" && ra.Verb == "get" && ra.Group == nadGroup
			}
		}
		if !reviewed {
			t.Errorf("%+v: no review of get on mv in %s", c.a, c.reviewN)
		}
	}
	if n, c := (Access{Namespace: "bench"}).Rules(); grants(n, nadResource, "get") || grants(c, nadResource, "get") {
		t.Error("a run without a secondary network may read NetworkAttachmentDefinitions")
	}
}

// TestCheckSecondaryAddresses: every pod of the pod network needs an address of its own on the
// network; two pods given one (host-local with one range on every node) are refused.
func TestCheckSecondaryAddresses(t *testing.T) {
	status := func(ip string) string {
		return `[{"name":"flannel","interface":"eth0","ips":["10.244.1.2"],"default":true},{"name":"bench/mv","interface":"net1","ips":["` + ip + `"]}]`
	}
	pod := func(name, ip string, host bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{}}, Spec: corev1.PodSpec{HostNetwork: host}}
		if ip != "" {
			p.Annotations[AnnotationNetworkStatus] = status(ip)
		}
		return p
	}
	f := &Fixture{Spec: FixtureSpec{Secondary: "bench/mv", Roles: []string{RoleClient, RoleServerB, RoleHostClient}},
		Pods: map[string][]*corev1.Pod{RoleClient: {pod("c0", "192.168.2.1", false), pod("c1", "192.168.2.3", false)},
			RoleServerB: {pod("b0", "192.168.2.2", false), pod("b1", "192.168.2.4", false)}, RoleHostClient: {pod("h0", "", true)}}}
	got, err := f.CheckSecondary()
	if want := "client net1 192.168.2.1, server-b net1 192.168.2.2"; err != nil || got != want {
		t.Errorf("CheckSecondary = %q, %v; want %q", got, err, want)
	}
	f.Pods[RoleServerB][1] = pod("b1", "192.168.2.1", false)
	if _, err := f.CheckSecondary(); err == nil || !strings.Contains(err.Error(), "pods c0 and b1 both got 192.168.2.1 on network bench/mv") {
		t.Errorf("two pods on one address: %v", err)
	}
	f.Pods[RoleServerB][1] = pod("b1", "", false)
	if _, err := f.CheckSecondary(); err == nil || !strings.Contains(err.Error(), "pod b1 got no address on network bench/mv") {
		t.Errorf("a pod without an address: %v", err)
	}
}

// TestQualifyNetwork: a name alone is the pod's namespace's, as Multus reads the annotation.
func TestQualifyNetwork(t *testing.T) {
	if got := QualifyNetwork("mv", "bench"); got != "bench/mv" {
		t.Errorf("QualifyNetwork(mv) = %q", got)
	}
	if got := QualifyNetwork("default/mv", "bench"); got != "default/mv" {
		t.Errorf("QualifyNetwork(default/mv) = %q", got)
	}
}
