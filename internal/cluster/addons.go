package cluster

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/cnibench/cnibench/internal/lab"
)

// corefile has no forward plugin: names outside the cluster get no answer rather than a query
// to the host's resolver.
const corefile = `.:53 {
    errors
    health :8080
    ready :8181
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    cache 30
    loop
    reload
}
`

// installAddons creates a RuntimeClass per runtime handler, kube-proxy's ConfigMap, and CoreDNS.
func installAddons(ctx context.Context, ac *actionContext) error {
	ns, client := metav1.NamespaceSystem, ac.client
	labels := map[string]string{"k8s-app": "kube-dns"}
	if err := publishKubeProxyConfig(ctx, client, ac.spec, ac.layout); err != nil {
		return err
	}
	for _, h := range ac.spec.Handlers() {
		rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: h}, Handler: h}
		if _, err := client.NodeV1().RuntimeClasses().Create(ctx, rc, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create RuntimeClass %s: %w", h, err)
		}
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: ns}}
	if _, err := client.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create CoreDNS service account: %w", err)
	}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "system:coredns"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"endpoints", "services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
		},
	}
	if _, err := client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create CoreDNS cluster role: %w", err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "system:coredns"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "system:coredns"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "coredns", Namespace: ns}},
	}
	if _, err := client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create CoreDNS cluster role binding: %w", err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: ns}, Data: map[string]string{"Corefile": corefile}}
	if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create CoreDNS config: %w", err)
	}
	if _, err := client.AppsV1().Deployments(ns).Create(ctx, corednsDeployment(ac.spec.Images.CoreDNS, labels), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create CoreDNS deployment: %w", err)
	}
	// kube-dns has an address of each family the cluster has, so that a pod of either finds it.
	p, policy := ac.spec.Plan(), corev1.IPFamilyPolicySingleStack
	ips := strs(p.DNSServiceIPs())
	if len(ips) > 1 {
		policy = corev1.IPFamilyPolicyRequireDualStack
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-dns", Namespace: ns, Labels: labels},
		Spec: corev1.ServiceSpec{
			Selector:  labels,
			ClusterIP: ips[0], ClusterIPs: ips, IPFamilyPolicy: &policy,
			Ports: []corev1.ServicePort{
				{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(53)},
				{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(53)},
			},
		},
	}
	if _, err := client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create kube-dns service: %w", err)
	}
	return nil
}

// corednsDeployment is CoreDNS, one replica of image.
func corednsDeployment(image string, labels map[string]string) *appsv1.Deployment {
	replicas := int32(1)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: metav1.NamespaceSystem, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: "coredns",
					PriorityClassName:  "system-cluster-critical",
					// Default: the kubelet's resolv.conf, which names no upstream server.
					DNSPolicy: corev1.DNSDefault,
					Containers: []corev1.Container{{
						Name:            "coredns",
						Image:           image,
						ImagePullPolicy: corev1.PullNever,
						Ports: []corev1.ContainerPort{
							{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP},
							{Name: "dns-tcp", ContainerPort: 53, Protocol: corev1.ProtocolTCP},
						},
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("32Mi"),
						}},
						VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/coredns", ReadOnly: true}},
						ReadinessProbe: &corev1.Probe{
							ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(8181)}},
							PeriodSeconds: 2,
						},
					}},
					Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{
						ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "coredns"}},
					}}},
				},
			},
		},
	}
}

// waitCoreDNS waits until the CoreDNS deployment is available; on timeout it says what the pod
// is doing and shows the end of its kubelet's log.
func waitCoreDNS(ctx context.Context, ac *actionContext) error {
	err := ac.procs.poll(ctx, "CoreDNS to become available", ac.waits.total, func() (bool, error) {
		d, err := ac.client.AppsV1().Deployments(metav1.NamespaceSystem).Get(ctx, "coredns", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return d.Status.AvailableReplicas >= 1, nil
	})
	if err == nil || ctx.Err() != nil {
		return err
	}
	node, state := ac.spec.NodeName(1), "no CoreDNS pod"
	pods, lerr := ac.client.CoreV1().Pods(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{LabelSelector: "k8s-app=kube-dns"})
	if lerr == nil && len(pods.Items) > 0 {
		p := pods.Items[0]
		state = fmt.Sprintf("CoreDNS pod %s: %s", p.Name, p.Status.Phase)
		if p.Spec.NodeName != "" {
			node = p.Spec.NodeName
		}
		for _, cs := range p.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil {
				state += fmt.Sprintf(", %s waiting: %s %s", cs.Name, w.Reason, w.Message)
			}
		}
	}
	return fmt.Errorf("%w; %s; last lines of %s-kubelet.log:\n%s", err, state, node,
		tail(ac.procs.logFile(node+"-kubelet"), 15))
}

// publishKubeProxyConfig writes the kube-proxy configuration into kube-system's kube-proxy
// ConfigMap, where kubeadm keeps it, so that whoever reads the cluster through its API alone
// (cnibench's own fingerprint of a remote target among them) finds the mode. The kube-proxies
// read their files; the ConfigMap only says what they run. A cluster without kube-proxy has
// none, as a kubeadm cluster whose CNI replaced it.
func publishKubeProxyConfig(ctx context.Context, client kubernetes.Interface, s Spec, l Layout) error {
	if s.ProxyMode == lab.ProxyNone {
		return nil
	}
	data, err := yaml.Marshal(kubeProxyConfig(s, l))
	if err != nil {
		return fmt.Errorf("encode kube-proxy config: %w", err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy", Namespace: metav1.NamespaceSystem, Labels: map[string]string{"app": "kube-proxy"}},
		Data: map[string]string{"config.conf": string(data)}}
	if _, err := client.CoreV1().ConfigMaps(metav1.NamespaceSystem).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create kube-proxy ConfigMap: %w", err)
	}
	return nil
}
