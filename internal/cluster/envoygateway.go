package cluster

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/cnibench/cnibench/internal/cluster/binaries"
	"github.com/cnibench/cnibench/internal/lab"
	"sigs.k8s.io/yaml"
)

// Envoy Gateway's objects the install waits for, as its chart names them (release
// envoy-gateway).
const (
	envoyGatewayDeployment = "envoy-gateway"
	envoyGatewayCertgen    = "envoy-gateway-gateway-helm-certgen"
)

// installEnvoyGateway installs Envoy Gateway on a cluster that asked for it: its CRDs, then
// its chart as setup rendered it, every image the cluster's tools image (which carries Envoy
// and Envoy Gateway): first the namespace's objects, RBAC and the certgen Job, whose
// certificates the controller mounts, then the controller once the Job has made them. The
// proxies come later, one per Gateway of a run.
func installEnvoyGateway(ctx context.Context, ac *actionContext) error {
	k := kubectlOf(ac.layout, ac.spec.Name, ac.bins)
	crds := ac.bins.bin(binaries.EnvoyGatewayCRDs)
	if err := k.Run(ctx, nil, "apply", "--server-side", "--force-conflicts", "-f", crds); err != nil {
		return fmt.Errorf("install Envoy Gateway %s CRDs: %w", binaries.EnvoyGatewayVersion, err)
	}
	if err := k.Run(ctx, nil, "wait", "--for=condition=Established", "--timeout=60s", "-f", crds); err != nil {
		return fmt.Errorf("wait for Envoy Gateway CRDs: %w", err)
	}
	raw, err := os.ReadFile(ac.bins.bin(binaries.EnvoyGatewayManifest))
	if err != nil {
		return err
	}
	first, controller, err := envoyGatewayObjects(raw, ac.spec.Images.Tools)
	if err != nil {
		return err
	}
	ns := lab.EnvoyGatewayNamespace
	if err := k.Run(ctx, strings.NewReader("apiVersion: v1\nkind: Namespace\nmetadata: {name: "+ns+"}\n"), "apply", "-f", "-"); err != nil {
		return fmt.Errorf("create namespace %s: %w", ns, err)
	}
	if err := k.Run(ctx, bytes.NewReader(first), "apply", "-f", "-"); err != nil {
		return fmt.Errorf("install Envoy Gateway: %w", err)
	}
	if err := k.Run(ctx, nil, "-n", ns, "wait", "--for=condition=Complete", "--timeout=120s", "job/"+envoyGatewayCertgen); err != nil {
		return fmt.Errorf("wait for Envoy Gateway's certgen: %w", err)
	}
	if err := k.Run(ctx, bytes.NewReader(controller), "apply", "-f", "-"); err != nil {
		return fmt.Errorf("install Envoy Gateway's controller: %w", err)
	}
	if err := k.Run(ctx, nil, "-n", ns, "wait", "--for=condition=Available", "--timeout=180s", "deployment/"+envoyGatewayDeployment); err != nil {
		return fmt.Errorf("wait for Envoy Gateway's controller: %w", err)
	}
	ac.spec.EnvoyGateway = true
	return ac.save()
}

// envoyGatewayObjects reads the rendered chart, puts image in place of the placeholder of every
// image reference, and returns its objects in two manifests: the controller's Deployment, and
// everything else, which the Deployment needs first. The chart's Deployment gives the
// controller's arguments only, relying on upstream's image's entrypoint, which the tools image
// has not: it gets the command.
func envoyGatewayObjects(rendered []byte, image string) (rest, controller []byte, err error) {
	text := string(rendered)
	if !strings.Contains(text, binaries.EnvoyGatewayImagePlaceholder) {
		return nil, nil, fmt.Errorf("%s names no image %s: rebuild it (cnibench setup)", binaries.EnvoyGatewayManifest, binaries.EnvoyGatewayImagePlaceholder)
	}
	text = strings.ReplaceAll(text, binaries.EnvoyGatewayImagePlaceholder, image)
	var restBuf, ctlBuf bytes.Buffer
	for _, doc := range strings.Split(text, "\n---") {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", binaries.EnvoyGatewayManifest, err)
		}
		if len(obj) == 0 {
			continue
		}
		out := &restBuf
		if obj["kind"] == "Deployment" {
			if err := setCommand(obj, envoyGatewayDeployment, binaries.EnvoyGatewayBinary); err != nil {
				return nil, nil, err
			}
			out = &ctlBuf
		}
		b, err := yaml.Marshal(obj)
		if err != nil {
			return nil, nil, err
		}
		fmt.Fprintf(out, "---\n%s", b)
	}
	if ctlBuf.Len() == 0 {
		return nil, nil, fmt.Errorf("%s holds no Deployment", binaries.EnvoyGatewayManifest)
	}
	return restBuf.Bytes(), ctlBuf.Bytes(), nil
}

// setCommand gives a Deployment's container of that name the command, where it has none.
func setCommand(obj map[string]any, container, command string) error {
	spec, _ := obj["spec"].(map[string]any)
	tmpl, _ := spec["template"].(map[string]any)
	pod, _ := tmpl["spec"].(map[string]any)
	containers, _ := pod["containers"].([]any)
	for _, c := range containers {
		m, _ := c.(map[string]any)
		if m["name"] != container {
			continue
		}
		if _, has := m["command"]; !has {
			m["command"] = []any{command}
		}
		return nil
	}
	return fmt.Errorf("%s: the Deployment has no container %s", binaries.EnvoyGatewayManifest, container)
}
