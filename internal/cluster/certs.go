package cluster

import (
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/cnibench/cnibench/internal/cluster/pki"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// pkiDir holds the cluster's certificates and kubeconfigs of its components.
func (l Layout) pkiDir(name string) string { return filepath.Join(l.Dir(name), "pki") }

// CAFile is the cluster's CA certificate. Besides the API server's, it signs the external
// agent's and the lab registry's certificates, so runs and nodes trust it alone for those.
func (l Layout) CAFile(name string) string { return filepath.Join(l.pkiDir(name), "ca.crt") }

// externalCert is the base name of the external agent's certificate and key in the PKI dir.
const externalCert = "external-agent"

// issueCert signs a serving certificate for ips with the CA of the cluster called name, writes
// it to the PKI directory as base.crt and base.key, and returns the two files.
func issueCert(l Layout, name, base string, ips ...net.IP) (cert, key string, err error) {
	dir := l.pkiDir(name)
	caCert, err := os.ReadFile(l.CAFile(name))
	if err != nil {
		return "", "", fmt.Errorf("read the cluster's CA: %w", err)
	}
	caKey, err := os.ReadFile(filepath.Join(dir, "ca.key"))
	if err != nil {
		return "", "", fmt.Errorf("read the cluster's CA: %w", err)
	}
	ca, err := pki.LoadCA(caCert, caKey)
	if err != nil {
		return "", "", err
	}
	pair, err := ca.Issue(pki.Request{CommonName: "cnibench-" + base, Server: true, IPs: ips})
	if err != nil {
		return "", "", err
	}
	if err := pair.Write(dir, base); err != nil {
		return "", "", err
	}
	return filepath.Join(dir, base+".crt"), filepath.Join(dir, base+".key"), nil
}

// writePKI issues every certificate the cluster needs and a kubeconfig per client identity.
func writePKI(l Layout, s Spec) error {
	dir := l.pkiDir(s.Name)
	ca, err := pki.NewCA("cnibench-" + s.Name)
	if err != nil {
		return err
	}
	if err := (pki.Pair{CertPEM: ca.CertPEM, KeyPEM: ca.KeyPEM}).Write(dir, "ca"); err != nil {
		return err
	}
	sa, err := pki.NewServiceAccountKey()
	if err != nil {
		return err
	}
	if err := sa.Write(dir, "sa"); err != nil {
		return err
	}
	plan := s.Plan()
	server := "https://" + net.JoinHostPort(plan.ControlPlaneIP().String(), "6443")

	certs := map[string]pki.Request{
		"apiserver": {
			CommonName: "kube-apiserver", Server: true,
			IPs: []net.IP{plan.ControlPlaneIP(), plan.KubernetesServiceIP(), net.IPv4(127, 0, 0, 1), plan.ControlPlaneIP6(), plan.KubernetesServiceIP6()},
			DNSNames: []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc",
				"kubernetes.default.svc.cluster.local", "localhost"},
		},
		"apiserver-kubelet-client": {CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}, Client: true},
	}
	kubeconfigs := map[string]pki.Request{
		"admin":              {CommonName: "cnibench-admin", Organization: []string{"system:masters"}, Client: true},
		"controller-manager": {CommonName: "system:kube-controller-manager", Client: true},
		"scheduler":          {CommonName: "system:kube-scheduler", Client: true},
		"kube-proxy":         {CommonName: "system:kube-proxy", Client: true},
	}
	for i := 1; i <= s.Nodes; i++ {
		node := s.NodeName(i)
		kubeconfigs["kubelet-"+node] = pki.Request{
			CommonName: "system:node:" + node, Organization: []string{"system:nodes"},
			IPs: []net.IP{plan.NodeIP(i), plan.NodeIP6(i)}, DNSNames: []string{node}, Client: true, Server: true,
		}
	}
	for base, req := range certs {
		pair, err := ca.Issue(req)
		if err != nil {
			return err
		}
		if err := pair.Write(dir, base); err != nil {
			return err
		}
	}
	for base, req := range kubeconfigs {
		pair, err := ca.Issue(req)
		if err != nil {
			return err
		}
		// Kubelets also serve with their client pair, so the files are kept beside the kubeconfig.
		if err := pair.Write(dir, base); err != nil {
			return err
		}
		path := filepath.Join(dir, base+".kubeconfig")
		if base == "admin" {
			path = l.Kubeconfig(s.Name)
		}
		if err := writeKubeconfig(path, "cnb-"+s.Name, server, ca.CertPEM, pair); err != nil {
			return err
		}
	}
	return nil
}

// writeKubeconfig writes a kubeconfig with embedded credentials, so it stays valid when copied.
func writeKubeconfig(path, name, server string, caPEM []byte, p pki.Pair) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificateData: p.CertPEM, ClientKeyData: p.KeyPEM}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	cfg.CurrentContext = name
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return nil
}
