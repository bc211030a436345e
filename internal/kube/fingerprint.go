package kube

import (
	"context"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Fingerprint records the configuration a run's figures depend on, read from the cluster.
// Keys the caller already knows (a local cluster's datapath and kube-proxy mode) are passed
// in known and win over detection.
func (c *Client) Fingerprint(ctx context.Context, f *Fixture, known map[string]string) map[string]string {
	fp := map[string]string{}
	if v, err := c.CS.Discovery().ServerVersion(); err == nil {
		fp["kubernetes_version"] = v.GitVersion
	}
	for key, node := range map[string]string{"node_a": f.Spec.Placement.NodeA, "node_b": f.Spec.Placement.NodeB} {
		fp[key] = node
		n, err := c.CS.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			continue
		}
		info := n.Status.NodeInfo
		fp[key+"_kernel"] = info.KernelVersion
		fp[key+"_os"] = info.OSImage
		fp[key+"_runtime"] = info.ContainerRuntimeVersion
		fp[key+"_kubelet"] = info.KubeletVersion
		fp[key+"_cpus"] = n.Status.Capacity.Cpu().String()
		// Single- or dual-stack, as the node's addresses say (primary first).
		fp[key+"_ip_families"] = strings.Join(NodeFamilies(*n), ",")
	}
	fp["runtime_handler"] = "default"
	if f.Spec.RuntimeClass != "" {
		fp["runtime_handler"] = f.Spec.RuntimeClass
	}
	cni, mode := c.DetectCNI(ctx)
	fp["cni"], fp["cni_mode"] = cni, mode
	fp["kube_proxy_mode"] = c.DetectProxyMode(ctx)
	// The family of the run's own Service: with none asked, the cluster's primary Service range.
	if len(f.ServiceIPs) > 0 && f.ServiceIPs[0] != "" {
		fp["service_ip_family"] = FamilyOf(f.ServiceIPs[0])
	}
	// The host client's sysctls are its node's: recorded, never changed.
	if p := f.Pod(RoleClient, 0); p != nil {
		c.interfaceFacts(ctx, f.Spec.Namespace, p.Name, "pod", fp)
		c.sysctlFacts(ctx, p, "pod", fp)
	}
	if p := f.Pod(RoleHostClient, 0); p != nil {
		c.interfaceFacts(ctx, f.Spec.Namespace, p.Name, "host", fp)
		c.sysctlFacts(ctx, p, "host", fp)
	}
	for k, v := range known {
		fp[k] = v
	}
	return fp
}

// interfaceFacts records the MTU and offloads of the interface a client's default route uses,
// and the default route's own MTU where it has one: a datapath may keep the interface at the
// underlay's MTU and lower the route's by its encapsulation's overhead (Cilium's tunnels).
func (c *Client) interfaceFacts(ctx context.Context, ns, pod, prefix string, fp map[string]string) {
	out, err := c.Exec(ctx, ns, pod, ClientContainer, []string{"sh", "-c",
		// An IPv6-only pod has no IPv4 route: its IPv6 one then ("route get" sends nothing).
		`dev=$( (ip -o route get 1.1.1.1 || ip -o route get 2001:db8::1) 2>/dev/null | sed -n 's/.* dev \([^ ]*\).*/\1/p'); [ -n "$dev" ] || dev=eth0; ` +
			`echo "dev $dev"; echo "mtu $(cat /sys/class/net/$dev/mtu)"; echo "route $(ip -o route show default 2>/dev/null || ip -6 -o route show default 2>/dev/null)"; ethtool -k $dev 2>/dev/null`})
	if err != nil {
		return
	}
	parseInterfaceFacts(string(out), prefix, fp)
}

// parseInterfaceFacts reads interfaceFacts' output into fp, each key under prefix.
func parseInterfaceFacts(out, prefix string, fp map[string]string) {
	for _, line := range strings.Split(out, "\n") {
		fields := strings.Fields(line)
		switch {
		case len(fields) == 2 && fields[0] == "dev":
			fp[prefix+"_interface"] = fields[1]
		case len(fields) == 2 && fields[0] == "mtu":
			fp[prefix+"_mtu"] = fields[1]
		case len(fields) > 0 && fields[0] == "route":
			if i := slices.Index(fields, "mtu"); i > 0 && i+1 < len(fields) {
				fp[prefix+"_route_mtu"] = fields[i+1]
			}
		default:
			if k, v, ok := offloadFact(line); ok {
				fp[prefix+"_"+k] = v
			}
		}
	}
}

// DetectCNI recognises the common CNIs by their DaemonSets and reads their mode where it is
// in a well-known ConfigMap; a CNI that runs outside pods (node daemons, as on the local
// cluster) is recognised by the annotations its agents put on the Nodes. Otherwise "unknown":
// never a guess.
func (c *Client) DetectCNI(ctx context.Context) (cni, mode string) {
	if cni, mode := c.cniFromDaemonSets(ctx); cni != "unknown" {
		return cni, mode
	}
	nodes, err := c.CS.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return "unknown", ""
	}
	// The CNIs' API groups (their CRDs) say what annotations may not: Calico where it only
	// enforces policy beside flannel (Canal), Cilium, which annotates no node by default.
	// Discovery is open to every user.
	var groups []string
	if list, err := c.CS.Discovery().ServerGroups(); err == nil {
		for _, g := range list.Groups {
			groups = append(groups, g.Name)
		}
	}
	return cniFromAnnotations(nodes.Items, groups)
}

// Node annotations the CNIs' agents write.
const (
	flannelBackendAnnotation = "flannel.alpha.coreos.com/backend-type"
	calicoPrefix             = "projectcalico.org/"
	calicoVXLANAnnotation    = "projectcalico.org/IPv4VXLANTunnelAddr"
	calicoIPIPAnnotation     = "projectcalico.org/IPv4IPIPTunnelAddr"
)

// API groups of the CNIs' CRDs.
const (
	calicoGroup = "crd.projectcalico.org"
	ciliumGroup = "cilium.io"
)

// cniFromAnnotations names the CNI whose agents annotated every node, and its mode where an
// annotation says it: flannel's backend, Calico's encapsulation. Flannel's annotations with
// Calico's API group (groups: the cluster's API groups) are Canal; Cilium's group is Cilium.
func cniFromAnnotations(nodes []corev1.Node, groups []string) (cni, mode string) {
	if len(nodes) == 0 {
		return "unknown", ""
	}
	every := func(has func(map[string]string) bool) bool {
		for _, n := range nodes {
			if !has(n.Annotations) {
				return false
			}
		}
		return true
	}
	prefixed := func(prefixes ...string) func(map[string]string) bool {
		return func(a map[string]string) bool {
			for k := range a {
				for _, p := range prefixes {
					if strings.HasPrefix(k, p) {
						return true
					}
				}
			}
			return false
		}
	}
	flannel := every(func(a map[string]string) bool { return a[flannelBackendAnnotation] != "" })
	calico := every(prefixed(calicoPrefix))
	a := nodes[0].Annotations
	switch {
	case flannel && (calico || slices.Contains(groups, calicoGroup)):
		return "canal", "backend=" + a[flannelBackendAnnotation]
	case flannel:
		return "flannel", "backend=" + a[flannelBackendAnnotation]
	case calico && a[calicoVXLANAnnotation] != "":
		return "calico", "encapsulation=vxlan"
	case calico && a[calicoIPIPAnnotation] != "":
		return "calico", "encapsulation=ipip"
	case calico:
		return "calico", ""
	case every(prefixed("network.cilium.io/", "io.cilium.network.")) || slices.Contains(groups, ciliumGroup):
		// Cilium annotates Nodes only when asked to; its CRDs (CiliumNode...) are always there.
		return "cilium", ""
	}
	return "unknown", ""
}

// cniFromDaemonSets recognises the common CNIs by their DaemonSets.
func (c *Client) cniFromDaemonSets(ctx context.Context) (string, string) {
	ds, err := c.CS.AppsV1().DaemonSets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return "unknown", ""
	}
	for _, d := range ds.Items {
		name := d.Name
		switch {
		case strings.HasPrefix(name, "cilium") && !strings.Contains(name, "envoy"):
			return "cilium", c.configValue(ctx, d.Namespace, "cilium-config", "routing-mode", "tunnel-protocol", "kube-proxy-replacement")
		case strings.Contains(name, "canal"):
			return "canal", ""
		case strings.Contains(name, "flannel"):
			return "flannel", c.configValue(ctx, d.Namespace, "kube-flannel-cfg", "net-conf.json")
		case strings.HasPrefix(name, "calico-node"):
			return "calico", ""
		case strings.HasPrefix(name, "antrea-agent"):
			return "antrea", ""
		case strings.HasPrefix(name, "weave-net"), strings.HasPrefix(name, "kindnet"), strings.HasPrefix(name, "kube-router"):
			return strings.SplitN(name, "-", 2)[0], ""
		}
	}
	return "unknown", ""
}

// configValue joins selected keys of a ConfigMap as "k=v" pairs; flannel's JSON is reduced
// to its backend type.
func (c *Client) configValue(ctx context.Context, ns, name string, keys ...string) string {
	cm, err := c.CS.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	var parts []string
	for _, k := range keys {
		v, ok := cm.Data[k]
		if !ok {
			continue
		}
		if k == "net-conf.json" {
			if m := regexp.MustCompile(`"Type"\s*:\s*"([^"]+)"`).FindStringSubmatch(v); m != nil {
				v = m[1]
			}
			parts = append(parts, "backend="+v)
			continue
		}
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, ",")
}

// DetectProxyMode reads kube-proxy's ConfigMap as kubeadm (and the local cluster) writes it;
// an empty mode means iptables. No kube-proxy at all usually means a CNI replaced it.
func (c *Client) DetectProxyMode(ctx context.Context) string {
	cm, err := c.CS.CoreV1().ConfigMaps("kube-system").Get(ctx, "kube-proxy", metav1.GetOptions{})
	if err != nil {
		if _, dsErr := c.CS.AppsV1().DaemonSets("kube-system").Get(ctx, "kube-proxy", metav1.GetOptions{}); dsErr != nil {
			return "none or unknown"
		}
		return "unknown"
	}
	for _, v := range cm.Data {
		if m := regexp.MustCompile(`(?m)^mode:\s*"?([a-z]*)"?`).FindStringSubmatch(v); m != nil {
			if m[1] == "" {
				return "iptables"
			}
			return m[1]
		}
	}
	return "unknown"
}
