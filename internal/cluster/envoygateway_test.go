package cluster

import (
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/cluster/binaries"
	"sigs.k8s.io/yaml"
)

// renderedChart is the shape of Envoy Gateway's rendered chart: comments, the certgen Job and
// the controller's Deployment (arguments only, as upstream's image has an entrypoint).
const renderedChart = `---
# Source: gateway-helm/templates/certgen.yaml
apiVersion: batch/v1
kind: Job
metadata: {name: envoy-gateway-gateway-helm-certgen, namespace: envoy-gateway-system}
spec:
  template:
    spec:
      containers:
      - {name: envoy-gateway-certgen, command: [envoy-gateway, certgen], image: ` + binaries.EnvoyGatewayImagePlaceholder + `, imagePullPolicy: Never}
---
# Source: gateway-helm/templates/envoy-gateway-deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata: {name: envoy-gateway, namespace: envoy-gateway-system}
spec:
  template:
    spec:
      containers:
      - {name: envoy-gateway, args: [server, --config-path=/config/envoy-gateway.yaml], image: ` + binaries.EnvoyGatewayImagePlaceholder + `}
`

// TestEnvoyGatewayObjects checks the install's reading of the rendered chart: the lab's image
// everywhere, the Deployment apart from what it needs first, and the controller's command.
func TestEnvoyGatewayObjects(t *testing.T) {
	const image = "cnibench.local/tools:0123456789ab"
	rest, ctl, err := envoyGatewayObjects([]byte(renderedChart), image)
	if err != nil {
		t.Fatal(err)
	}
	for name, m := range map[string][]byte{"rest": rest, "controller": ctl} {
		if strings.Contains(string(m), binaries.EnvoyGatewayImagePlaceholder) || !strings.Contains(string(m), image) {
			t.Errorf("%s manifest keeps the placeholder or lacks %s:\n%s", name, image, m)
		}
	}
	if !strings.Contains(string(rest), "kind: Job") || strings.Contains(string(rest), "kind: Deployment") {
		t.Errorf("first manifest:\n%s", rest)
	}
	var d struct {
		Kind string
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Command, Args []string
					}
				}
			}
		}
	}
	if err := yaml.Unmarshal([]byte(strings.TrimPrefix(string(ctl), "---\n")), &d); err != nil {
		t.Fatal(err)
	}
	if c := d.Spec.Template.Spec.Containers; d.Kind != "Deployment" || len(c) != 1 || strings.Join(c[0].Command, " ") != "envoy-gateway" || len(c[0].Args) != 2 {
		t.Errorf("controller %+v, want the Deployment running envoy-gateway server ...", d)
	}
	if _, _, err := envoyGatewayObjects([]byte("kind: Job\n"), image); err == nil || !strings.Contains(err.Error(), "rebuild it") {
		t.Errorf("a manifest without the placeholder: %v", err)
	}
}
