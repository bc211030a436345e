//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/cluster"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// labPullSecret is the pull Secret of the least-privilege namespace.
const labPullSecret = "cnb-lab-registry"

// pushToLabRegistry pushes the tools image to the cluster's lab registry with `cnibench image
// push` and the credentials its create wrote, from the external host (outside the nodes, only
// the lab reaches the registry), creates the namespace's pull Secret from the same credentials
// as an administrator would, and returns the image by the digest the push printed. Pushing with
// no credentials is refused first.
func pushToLabRegistry(ctx context.Context, t *testing.T, w *workload, clusterName, ns string) string {
	t.Helper()
	layout := cluster.DefaultLayout()
	spec, err := layout.ReadSpec(clusterName)
	if err != nil {
		t.Fatal(err)
	}
	addr, ok := spec.LabRegistry()
	if !ok {
		t.Fatalf("cluster %s has no lab registry: created without --registry?", clusterName)
	}
	repo := addr + "/cnibench/tools"
	push := func(dockerConfig string) (string, error) {
		cmd := exec.CommandContext(ctx, "ip", "netns", "exec", spec.ExtNetns(), cnibenchBin, "image", "push", repo+":e2e",
			"--ca-file", layout.CAFile(clusterName))
		cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+dockerConfig)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := push(t.TempDir()); err == nil || !strings.Contains(out, "401 Unauthorized") {
		t.Errorf("push without credentials: %v, want the registry's refusal\n%s", err, out)
	}
	out, err := push(layout.RegistryAuthDir(clusterName))
	if err != nil {
		t.Fatalf("push to the lab registry: %v\n%s", err, out)
	}
	image := lastLine(out)
	if !strings.HasPrefix(image, repo+"@sha256:") {
		t.Fatalf("image push printed %q last, want %s@sha256:...", image, repo)
	}
	auth, err := os.ReadFile(filepath.Join(layout.RegistryAuthDir(clusterName), "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: labPullSecret, Namespace: ns},
		Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: auth}}
	if _, err := w.cs.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return image
}

// checkPulled finds, in the namespace's events, the kubelets' record of pulling image: the
// nodes did not have it, and fetched it from the registry.
func checkPulled(ctx context.Context, t *testing.T, w *workload, ns, image string) {
	t.Helper()
	events, err := w.cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=Pulled"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if strings.Contains(e.Message, "Successfully pulled image \""+image+"\"") {
			return
		}
	}
	var got []string
	for _, e := range events.Items {
		got = append(got, e.Message)
	}
	t.Errorf("no node pulled %s; Pulled events: %q", image, got)
}

// lastLine is the last non-empty line of out: where a command's error is.
func lastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[len(lines)-1]
}
