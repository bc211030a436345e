package cluster

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/cnibench/cnibench/internal/cluster/binaries"
)

// The lab registry is a distribution registry on the external host, with TLS from the
// cluster's CA and one user: what a cluster's nodes meet when they pull the tools image from a
// user's registry, without leaving the lab.
const (
	// registryPort is the registry's port on the external host.
	registryPort = 5000
	// RegistryUser is the registry's one user; its password is in RegistryAuthDir.
	RegistryUser = "cnibench"
)

// RegistryAddr is the lab registry's host:port: the external host's address, which every node
// reaches directly.
func (p Plan) RegistryAddr() string {
	return net.JoinHostPort(p.ExternalIP().String(), strconv.Itoa(registryPort))
}

// LabRegistry returns the host:port of the cluster's lab registry, or false when it was
// created without one.
func (s Spec) LabRegistry() (string, bool) {
	if !s.Registry {
		return "", false
	}
	return s.Plan().RegistryAddr(), true
}

// RegistryAuthDir is a docker config directory (DOCKER_CONFIG) holding the lab registry's
// credentials, as `docker login` writes them: for `image push`, and for a pull Secret
// (kubectl create secret generic --from-file=.dockerconfigjson=DIR/config.json).
func (l Layout) RegistryAuthDir(name string) string {
	return filepath.Join(l.Dir(name), "registry-auth")
}

// registryDir holds the registry's configuration and storage.
func (l Layout) registryDir(name string) string { return filepath.Join(l.Dir(name), "registry") }

// registryComponents is the registry's build when the cluster has one.
func registryComponents(want bool) ([]binaries.Component, error) {
	if !want {
		return nil, nil
	}
	comp, err := binaries.Lookup(binaries.Registry)
	if err != nil {
		return nil, err
	}
	return []binaries.Component{comp}, nil
}

// hostsTOML is containerd's configuration of the lab registry: HTTPS, trusting the cluster's
// CA alone. containerd reads it at every pull.
func hostsTOML(addr, caFile string) string {
	return fmt.Sprintf("server = %q\n\n[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n  ca = %q\n",
		"https://"+addr, "https://"+addr, caFile)
}

// writeRegistryHosts gives a node's containerd, whose registry configuration is certsDir, the
// lab registry at addr, trusting caFile.
func writeRegistryHosts(certsDir, addr, caFile string) error {
	dir := filepath.Join(certsDir, addr)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "hosts.toml"), []byte(hostsTOML(addr, caFile)), 0o644); err != nil {
		return fmt.Errorf("the lab registry's hosts.toml: %w", err)
	}
	return nil
}

// setupRegistry starts the lab registry on the external host, when the cluster asks for one:
// a certificate from the cluster's CA for the external host's address, a random password in
// an htpasswd file, and the credentials where a push and a pull Secret find them.
func setupRegistry(ctx context.Context, ac *actionContext) error {
	s, p := ac.spec, ac.spec.Plan()
	dir := ac.layout.registryDir(s.Name)
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o700); err != nil {
		return fmt.Errorf("the lab registry: %w", err)
	}
	cert, key, err := issueCert(ac.layout, s.Name, "registry", p.ExternalIP())
	if err != nil {
		return fmt.Errorf("the lab registry: %w", err)
	}
	if err := writeRegistryAuth(dir, ac.layout.RegistryAuthDir(s.Name), p.RegistryAddr()); err != nil {
		return err
	}
	config := fmt.Sprintf(`version: 0.1
log: {level: warn}
storage: {filesystem: {rootdirectory: %q}, delete: {enabled: true}}
http: {addr: %q, tls: {certificate: %q, key: %q}}
auth: {htpasswd: {realm: cnibench-lab, path: %q}}
`, filepath.Join(dir, "data"), p.RegistryAddr(), cert, key, filepath.Join(dir, "htpasswd"))
	if err := os.WriteFile(filepath.Join(dir, "config.yml"), []byte(config), 0o600); err != nil {
		return fmt.Errorf("the lab registry's configuration: %w", err)
	}
	// The registry exports traces only when told to; none is a lab's only safe setting.
	r, err := ac.procs.start(daemon{name: "registry", netns: s.ExtNetns(), cgroup: s.CgroupRoot() + "/ext",
		argv: []string{ac.bins.bin(binaries.RegistryBinary), "serve", filepath.Join(dir, "config.yml")},
		env:  []string{"OTEL_TRACES_EXPORTER=none", "OTEL_SDK_DISABLED=true"}})
	if err != nil {
		return err
	}
	return ac.procs.poll(ctx, "the lab registry", ac.waits.step(6, 20*time.Second), func() (bool, error) {
		if err := r.exited(); err != nil {
			return false, err
		}
		return exec.CommandContext(ctx, "ip", "netns", "exec", s.ExtNetns(), "bash", "-c",
			fmt.Sprintf("exec 3<>/dev/tcp/%s/%d", p.ExternalIP(), registryPort)).Run() == nil, nil
	})
}

// writeRegistryAuth makes the registry's password and writes its htpasswd file in dir and the
// docker config holding it in authDir.
func writeRegistryAuth(dir, authDir, addr string) error {
	raw := make([]byte, 16)
	if _, err := rand.Read(raw); err != nil {
		return fmt.Errorf("the lab registry's password: %w", err)
	}
	password := hex.EncodeToString(raw)
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return fmt.Errorf("the lab registry's password: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "htpasswd"), []byte(RegistryUser+":"+string(hash)+"\n"), 0o600); err != nil {
		return fmt.Errorf("the lab registry's htpasswd: %w", err)
	}
	auth := map[string]any{"auths": map[string]any{addr: map[string]string{
		"auth": base64.StdEncoding.EncodeToString([]byte(RegistryUser + ":" + password))}}}
	doc, _ := json.MarshalIndent(auth, "", "  ")
	if err := os.MkdirAll(authDir, 0o700); err != nil {
		return fmt.Errorf("the lab registry's credentials: %w", err)
	}
	if err := os.WriteFile(filepath.Join(authDir, "config.json"), doc, 0o600); err != nil {
		return fmt.Errorf("the lab registry's credentials: %w", err)
	}
	return nil
}
