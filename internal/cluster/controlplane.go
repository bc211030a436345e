package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// admissionConfig makes Pod Security's baseline level the default of every namespace, as
// platform teams set their clusters: pods that need more (host network) run only in a
// namespace labelled for it, which a run's own namespace is when its paths need it. kube-system
// is exempt, as in most distributions. No warn or audit default: a privileged namespace's pods
// would each print a warning.
const admissionConfig = `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
  - name: PodSecurity
    configuration:
      apiVersion: pod-security.admission.config.k8s.io/v1
      kind: PodSecurityConfiguration
      defaults:
        enforce: baseline
        enforce-version: latest
      exemptions:
        namespaces: [kube-system]
`

// auditPolicy logs who changed what (Metadata level: user, verb, object, no bodies), and only
// changes: a reviewer can then check from the log that a run's credentials touched nothing
// outside their namespace. Reads, the bulk of the requests, are not logged.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    verbs: [create, update, patch, delete, deletecollection]
  - level: None
`

// AuditLog is where a local cluster's API server logs every change made through it, one JSON
// event a line (audit.k8s.io/v1 Event, Metadata level).
func AuditLog(l Layout, name string) string { return filepath.Join(l.LogDir(name), "audit.log") }

// startControlPlane starts etcd and the API server, waits for /readyz, then starts the
// controller-manager and scheduler.
func startControlPlane(ctx context.Context, ac *actionContext) error {
	s := ac.spec
	dir := ac.layout.Dir(s.Name)
	inCtl := func(name string, argv []string) error {
		_, err := ac.procs.start(daemon{name: name, netns: s.CtlNetns(), cgroup: s.CgroupRoot() + "/ctl", argv: argv})
		return err
	}
	// etcd listens on the namespace's loopback only: nothing but the API server talks to it.
	if err := inCtl("etcd", []string{
		hostBin("etcd"),
		"--name=cnb", "--data-dir=" + filepath.Join(dir, "etcd"),
		"--listen-client-urls=http://127.0.0.1:2379", "--advertise-client-urls=http://127.0.0.1:2379",
		"--listen-peer-urls=http://127.0.0.1:2380", "--initial-advertise-peer-urls=http://127.0.0.1:2380",
		"--initial-cluster=cnb=http://127.0.0.1:2380", "--listen-metrics-urls=",
		"--quota-backend-bytes=2147483648", "--log-level=warn",
	}); err != nil {
		return err
	}
	admission, audit := filepath.Join(dir, "admission.yaml"), filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(admission, []byte(admissionConfig), 0o644); err != nil {
		return fmt.Errorf("write the API server's admission configuration: %w", err)
	}
	if err := os.WriteFile(audit, []byte(auditPolicy), 0o644); err != nil {
		return fmt.Errorf("write the API server's audit policy: %w", err)
	}
	if err := inCtl("kube-apiserver", apiServerArgv(s, ac.layout, ac.bins.kube("kube-apiserver"), admission, audit)); err != nil {
		return err
	}
	ac.log.Printf("waiting for the API server")
	if err := waitAPIServer(ctx, ac); err != nil {
		return err
	}
	pk := func(f string) string { return filepath.Join(ac.layout.pkiDir(s.Name), f) }
	common := []string{
		"--kubeconfig=" + pk("{who}.kubeconfig"),
		"--authentication-kubeconfig=" + pk("{who}.kubeconfig"),
		"--authorization-kubeconfig=" + pk("{who}.kubeconfig"),
		"--leader-elect=false", "--bind-address=127.0.0.1", "--profiling=false",
		"--cert-dir=" + filepath.Join(dir, "{who}"),
	}
	cmArgs := append(expand(common, "controller-manager"), controllerManagerArgs(s, ac.layout, ac.dp.AllocateNodeCIDRs())...)
	if err := inCtl("kube-controller-manager", append([]string{ac.bins.kube("kube-controller-manager")}, cmArgs...)); err != nil {
		return err
	}
	return inCtl("kube-scheduler", append([]string{ac.bins.kube("kube-scheduler")}, expand(common, "scheduler")...))
}

// apiServerArgv is the API server's command line, the binary first; admission and audit are
// its configuration files.
func apiServerArgv(s Spec, l Layout, binary, admission, audit string) []string {
	p, dir := s.Plan(), l.Dir(s.Name)
	pk := func(f string) string { return filepath.Join(l.pkiDir(s.Name), f) }
	return []string{
		binary,
		"--etcd-servers=http://127.0.0.1:2379",
		"--advertise-address=" + p.APIServerIP().String(),
		// The root namespace and the nodes reach it over IPv4 in every family.
		"--bind-address=" + p.ListenAll(), "--secure-port=6443",
		"--service-cluster-ip-range=" + joined(p.ServiceCIDRs()),
		"--client-ca-file=" + pk("ca.crt"),
		"--tls-cert-file=" + pk("apiserver.crt"), "--tls-private-key-file=" + pk("apiserver.key"),
		"--kubelet-client-certificate=" + pk("apiserver-kubelet-client.crt"),
		"--kubelet-client-key=" + pk("apiserver-kubelet-client.key"),
		"--kubelet-certificate-authority=" + pk("ca.crt"),
		// Node names resolve nowhere (the host's resolver must never see them): use addresses.
		"--kubelet-preferred-address-types=InternalIP",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + pk("sa.crt"),
		"--service-account-signing-key-file=" + pk("sa.key"),
		"--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
		"--admission-control-config-file=" + admission,
		"--audit-policy-file=" + audit, "--audit-log-path=" + AuditLog(l, s.Name),
		"--audit-log-maxsize=100", "--audit-log-maxbackup=1",
		"--allow-privileged=true", "--profiling=false",
		"--cert-dir=" + filepath.Join(dir, "apiserver"),
	}
}

// controllerManagerArgs are the controller-manager's own flags; allocate says whether it
// allocates the nodes' pod CIDRs (the datapath's choice).
func controllerManagerArgs(s Spec, l Layout, allocate bool) []string {
	p, pk := s.Plan(), func(f string) string { return filepath.Join(l.pkiDir(s.Name), f) }
	args := []string{
		// Node certificates are issued up front, so nothing signs CSRs; the four signers would
		// each hold an inotify instance on the CA files, and root's instances are what limits
		// how many clusters run at once.
		"--controllers=*,-csrsigning",
		// The default, /usr/libexec/kubernetes/..., would be created on the host.
		"--flex-volume-plugin-dir=" + filepath.Join(l.Dir(s.Name), "controller-manager", "volume-plugins"),
		"--root-ca-file=" + pk("ca.crt"), "--service-account-private-key-file=" + pk("sa.key"),
		"--use-service-account-credentials=true",
		"--service-cluster-ip-range=" + joined(p.ServiceCIDRs()),
		"--cluster-cidr=" + joined(p.ClusterCIDRs()),
		fmt.Sprintf("--allocate-node-cidrs=%t", allocate),
		// Without a cloud provider the route controller would only complain.
		"--configure-cloud-routes=false",
	}
	// The plan's node subnets, a /24 of IPv4 and a /64 of IPv6; the controller-manager refuses
	// the flag of a family the cluster has not.
	return append(args, families(p, "--node-cidr-mask-size-ipv4=24", "--node-cidr-mask-size-ipv6=64")...)
}

// expand fills the {who} in each argument.
func expand(args []string, who string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = strings.ReplaceAll(a, "{who}", who)
	}
	return out
}
