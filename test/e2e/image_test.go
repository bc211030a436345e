//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/cluster/binaries"
	"github.com/cnibench/cnibench/internal/cluster/pki"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"golang.org/x/crypto/bcrypt"
)

// TestToolsImagePushedToARegistry pushes the tools image with `cnibench image push` to a real
// registry (distribution, TLS from a CA of the test's own, htpasswd authentication, the
// credentials in a docker config as `docker login` writes it) and reads it back by the digest
// the command printed; wrong credentials and an untrusted certificate are refused; `image
// build --oci-layout` writes the same image for a registry out of reach.
func TestToolsImagePushedToARegistry(t *testing.T) {
	requireBuilt(t, binaries.Registry)
	before := snapshot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir := t.TempDir()
	reg := startRegistry(ctx, t, dir)
	repo := reg.addr + "/cnibench/tools"

	start := time.Now()
	out, err := cliEnv(ctx, []string{"DOCKER_CONFIG=" + reg.dockerConfig(t, "s3cret")}, "image", "push", repo+":e2e", "--ca-file", reg.caFile)
	if err != nil {
		t.Fatalf("image push: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	pushed := lines[len(lines)-1]
	t.Logf("image push took %s:\n%s", time.Since(start).Round(100*time.Millisecond), out)
	if !strings.HasPrefix(pushed, repo+"@sha256:") || !strings.Contains(out, "pushed 100 %") {
		t.Fatalf("image push printed %q, want %s@sha256:... after its progress", pushed, repo)
	}
	ref, err := name.ParseReference(repo + ":e2e")
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Get(ref, remote.WithContext(ctx), remote.WithTransport(reg.transport(t)),
		remote.WithAuth(&authn.Basic{Username: "cnb", Password: "s3cret"}))
	if err != nil {
		t.Fatalf("read the pushed image back: %v", err)
	}
	if got := repo + "@" + desc.Digest.String(); got != pushed {
		t.Errorf("the registry holds %s, the command printed %s", got, pushed)
	}
	if img, err := desc.Image(); err != nil {
		t.Error(err)
	} else if layers, err := img.Layers(); err != nil || len(layers) != 2 {
		t.Errorf("%d layers (%v), want the root filesystem and the binaries", len(layers), err)
	}

	if out, err := cliEnv(ctx, []string{"DOCKER_CONFIG=" + reg.dockerConfig(t, "wrong")}, "image", "push", repo+":e2e", "--ca-file", reg.caFile); err == nil ||
		!strings.Contains(out, "the registry "+reg.addr+" refused the credentials (401 Unauthorized)") {
		t.Errorf("push with a wrong password: %v\n%s", err, out)
	}
	if out, err := cliEnv(ctx, []string{"DOCKER_CONFIG=" + reg.dockerConfig(t, "s3cret")}, "image", "push", repo+":e2e"); err == nil ||
		!strings.Contains(out, "certificate") {
		t.Errorf("push to a registry whose CA is not trusted: %v\n%s", err, out)
	}

	oci := filepath.Join(dir, "layout")
	if out, err := cli(ctx, "image", "build", "--oci-layout", oci); err != nil || !strings.Contains(out, desc.Digest.String()) {
		t.Errorf("image build --oci-layout: %v\n%s", err, out)
	}
	if idx, err := layout.ImageIndexFromPath(oci); err != nil {
		t.Error(err)
	} else if m, err := idx.IndexManifest(); err != nil || len(m.Manifests) != 1 || m.Manifests[0].Digest != desc.Digest {
		t.Errorf("OCI layout manifests %+v (%v), want the pushed image", m, err)
	}
	reg.stop(t)
	assertClean(t, before)
}

// registry is a distribution registry the test runs on loopback.
type registry struct {
	addr, dir, caFile string
	caPEM             []byte
	cmd               *exec.Cmd
}

// startRegistry runs the registry with TLS from a new CA and an htpasswd file holding user
// cnb, password s3cret, and waits until it answers.
func startRegistry(ctx context.Context, t *testing.T, dir string) *registry {
	t.Helper()
	ca, err := pki.NewCA("cnb-e2e-registry-ca")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ca.Issue(pki.Request{CommonName: "127.0.0.1", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Server: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Write(dir, "registry"); err != nil {
		t.Fatal(err)
	}
	r := &registry{dir: dir, caFile: filepath.Join(dir, "ca.crt"), caPEM: ca.CertPEM}
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.DefaultCost)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.addr = ln.Addr().String()
	ln.Close()
	config := fmt.Sprintf(`version: 0.1
log: {level: warn}
storage: {filesystem: {rootdirectory: %s}}
http: {addr: %s, tls: {certificate: %s, key: %s}}
auth: {htpasswd: {realm: cnibench-e2e, path: %s}}
`, filepath.Join(dir, "data"), r.addr, filepath.Join(dir, "registry.crt"), filepath.Join(dir, "registry.key"), filepath.Join(dir, "htpasswd"))
	for file, content := range map[string][]byte{"ca.crt": ca.CertPEM, "htpasswd": []byte("cnb:" + string(hash) + "\n"), "config.yml": []byte(config)} {
		if err := os.WriteFile(filepath.Join(dir, file), content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r.cmd = exec.CommandContext(ctx, binaries.Default().Path(binaries.RegistryBinary), "serve", filepath.Join(dir, "config.yml"))
	var logs bytes.Buffer
	r.cmd.Stdout, r.cmd.Stderr = &logs, &logs
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.stop(t) })
	client := &http.Client{Transport: r.transport(t), Timeout: 2 * time.Second}
	for deadline := time.Now().Add(30 * time.Second); ; {
		resp, err := client.Get("https://" + r.addr + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusUnauthorized {
				return r // up, and asking for credentials
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("registry not answering on %s: %v\n%s", r.addr, err, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// transport trusts the registry's CA.
func (r *registry) transport(t *testing.T) http.RoundTripper {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(r.caPEM) {
		t.Fatal("CA certificate")
	}
	return &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
}

// dockerConfig writes a docker config holding the registry's credentials with password and
// returns its directory (DOCKER_CONFIG).
func (r *registry) dockerConfig(t *testing.T, password string) string {
	d := filepath.Join(r.dir, "docker-"+password)
	auth := base64.StdEncoding.EncodeToString([]byte("cnb:" + password))
	if err := os.MkdirAll(d, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "config.json"), []byte(`{"auths": {"`+r.addr+`": {"auth": "`+auth+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return d
}

// stop ends the registry (once).
func (r *registry) stop(t *testing.T) {
	if r.cmd.ProcessState != nil {
		return
	}
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
}
