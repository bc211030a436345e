package kube

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/cnibench/cnibench/internal/setting"
)

// The NetworkAttachmentDefinitions of the network plumbing working group's multi-network
// specification, which Multus serves through its CRD.
const (
	nadGroup        = "k8s.cni.cncf.io"
	nadGroupVersion = nadGroup + "/v1"
	nadResource     = "network-attachment-definitions"
	// annotationResourceName asks a pod's network for a device plugin's device (SR-IOV).
	annotationResourceName = "k8s.v1.cni.cncf.io/resourceName"
	// GlobalNetworkNamespace is the namespace whose NetworkAttachmentDefinitions Multus
	// (v4.2.3) gives pods of every namespace. With its namespaceIsolation off, the default,
	// every namespace's are; with it on, only the pod's own namespace's and those of
	// globalNamespaces, whose default is this one alone (a list set there replaces it).
	GlobalNetworkNamespace = "default"
	// secondaryNetworkSetting names the setting the preflight's errors are about.
	secondaryNetworkSetting = "secondaryNetwork"
)

// QualifyNetwork names a network attachment as namespace/name: a name alone is in the pod's
// namespace, as Multus reads a pod's k8s.v1.cni.cncf.io/networks annotation.
func QualifyNetwork(network, podNamespace string) string {
	if strings.Contains(network, "/") {
		return network
	}
	return podNamespace + "/" + network
}

// Attachment is what the preflight read of a network attachment, for the fingerprint.
type Attachment struct {
	Network string // namespace/name
	// Plugins are the CNI plugin types of its config, in order, and IPAM its IPAM plugin's;
	// both empty when it has no config and Multus reads the node's file of its name.
	Plugins []string
	IPAM    string
}

// String describes the attachment in a line: "bench/macvlan: macvlan, ipam whereabouts".
func (a Attachment) String() string {
	if len(a.Plugins) == 0 {
		return a.Network + ": config on the nodes (the file of its name in Multus' confDir)"
	}
	out := a.Network + ": " + strings.Join(a.Plugins, ", ")
	if a.IPAM != "" {
		out += ", ipam " + a.IPAM
	}
	return out
}

// CheckNetworkAttachment is the preflight of the secondary paths on network, a
// NetworkAttachmentDefinition as namespace/name, for pods of podNamespace: one error naming the
// setting when Multus would not give the run's pods an address on it. It checks, in order, that
// Multus could hand it to a pod of that namespace, that the cluster serves
// NetworkAttachmentDefinitions, that this one exists and may be read, and that its config gives
// pods an address of their own.
func (c *Client) CheckNetworkAttachment(ctx context.Context, network, podNamespace string) (Attachment, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	refuse := func(format string, args ...any) error {
		return &setting.Error{Name: secondaryNetworkSetting, Value: strconv.Quote(network), Want: fmt.Sprintf(format, args...)}
	}
	ns, name, _ := strings.Cut(network, "/")
	if ns != podNamespace && ns != GlobalNetworkNamespace {
		return Attachment{}, refuse("the run's pods are in namespace %s, and Multus gives a pod another namespace's NetworkAttachmentDefinition only "+
			"while its namespaceIsolation is off (its default; the API does not show it) or from its globalNamespaces (by default namespace %s alone): expected one in %s or in %s",
			podNamespace, GlobalNetworkNamespace, podNamespace, GlobalNetworkNamespace)
	}
	served, err := c.servesAttachments(ctx)
	if err != nil {
		return Attachment{}, fmt.Errorf("%s %q: ask %s which APIs it serves: %w", secondaryNetworkSetting, network, c.Server, err)
	}
	if !served {
		return Attachment{}, refuse("the cluster at %s has no Multus: it serves no NetworkAttachmentDefinitions (CRD %s.%s absent)", c.Server, nadResource, nadGroup)
	}
	if c.NADs == nil {
		return Attachment{}, fmt.Errorf("%s %q: the client has no NetworkAttachmentDefinition client", secondaryNetworkSetting, network)
	}
	nad, err := c.NADs.K8sCniCncfIoV1().NetworkAttachmentDefinitions(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return Attachment{}, refuse("no NetworkAttachmentDefinition %s in namespace %s on %s", name, ns, c.Server)
	case apierrors.IsForbidden(err):
		return Attachment{}, refuse("missing RBAC permission on %s: get %s in namespace %s (cnibench rbac --secondary-network prints the rule)", c.Server, nadResource, ns)
	case err != nil:
		return Attachment{}, fmt.Errorf("%s %q: read it from %s: %w", secondaryNetworkSetting, network, c.Server, err)
	}
	a, why := attachmentOf(network, nad)
	if why != "" {
		return Attachment{}, refuse("%s", why)
	}
	return a, nil
}

// servesAttachments asks the API server's discovery whether it serves
// NetworkAttachmentDefinitions: a group it does not serve is a 404, not an error.
func (c *Client) servesAttachments(ctx context.Context) (bool, error) {
	d, err := c.discoveryWithin(ctx)
	if err != nil {
		return false, err
	}
	list, err := d.ServerResourcesForGroupVersion(nadGroupVersion)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == nadResource }), nil
}

// discoveryWithin is a discovery client whose requests end by ctx's deadline (discovery's calls
// take no context); a client without a config (a fake's) uses its clientset's.
func (c *Client) discoveryWithin(ctx context.Context) (discovery.DiscoveryInterface, error) {
	if c.config == nil {
		return c.CS.Discovery(), nil
	}
	cfg := rest.CopyConfig(c.config)
	if deadline, ok := ctx.Deadline(); ok {
		cfg.Timeout = time.Until(deadline)
	}
	return discovery.NewDiscoveryClientForConfig(cfg)
}

// cniConfig is what the preflight reads of a NetworkAttachmentDefinition's CNI config: a
// single plugin's or a list's.
type cniConfig struct {
	cniPlugin
	Plugins []cniPlugin `json:"plugins"`
}

// cniPlugin is one plugin of a CNI config.
type cniPlugin struct {
	Type string `json:"type"`
	IPAM *struct {
		Type      string          `json:"type"`
		Addresses json.RawMessage `json:"addresses"`
	} `json:"ipam"`
	// Subnets are where OVN-Kubernetes' secondary networks take addresses, with no ipam block.
	Subnets string `json:"subnets"`
}

// attachmentOf reads a NetworkAttachmentDefinition's config; why says, when it is set, why
// the run's pods would get no address on it.
func attachmentOf(network string, nad *nadv1.NetworkAttachmentDefinition) (a Attachment, why string) {
	a.Network = network
	if res := nad.Annotations[annotationResourceName]; res != "" {
		return a, fmt.Sprintf("it attaches a device plugin's device (%s: %s), which the run's pods do not request: expected a network of no device resource", annotationResourceName, res)
	}
	if strings.TrimSpace(nad.Spec.Config) == "" {
		// Multus then reads the node's file of its name, which the API cannot show: the
		// addresses are checked on the pods instead (Fixture.CheckSecondary).
		return a, ""
	}
	var conf cniConfig
	if err := json.Unmarshal([]byte(nad.Spec.Config), &conf); err != nil {
		return a, fmt.Sprintf("its spec.config is not a CNI config (JSON): %v", err)
	}
	plugins := conf.Plugins
	if len(plugins) == 0 {
		plugins = []cniPlugin{conf.cniPlugin}
	}
	addressed := false
	for _, p := range plugins {
		a.Plugins = append(a.Plugins, cmp.Or(p.Type, "(no type)"))
		switch {
		case p.IPAM != nil && p.IPAM.Type == "static" && len(p.IPAM.Addresses) == 0:
			// static hands out only the addresses its config (or the pod's annotation) lists.
			a.IPAM = "static"
		case p.IPAM != nil && p.IPAM.Type != "":
			a.IPAM, addressed = p.IPAM.Type, true
		case p.Type == "ovn-k8s-cni-overlay" && p.Subnets != "":
			a.IPAM, addressed = "ovn-k8s-cni-overlay subnets "+p.Subnets, true
		}
	}
	if !addressed {
		return a, fmt.Sprintf("its config (%s) has no IPAM that gives pods addresses, so the run's pods would get none: "+
			`expected an ipam block such as {"type": "whereabouts", "range": "192.168.2.0/24"}`, strings.Join(a.Plugins, ", "))
	}
	return a, ""
}
