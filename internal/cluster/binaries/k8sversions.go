package binaries

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cnibench/cnibench/internal/lab"
)

// KubernetesComponent returns the build of one Kubernetes release; its binaries live in a
// directory of their own (bin/kubernetes-<version>/), so releases are cached side by side.
func KubernetesComponent(version string) (Component, error) {
	if err := lab.CheckKubernetesVersion(version); err != nil {
		return Component{}, err
	}
	return kubernetesComponent(version), nil
}

// KubectlPath is where the kubectl of a Kubernetes release is cached.
func (c Cache) KubectlPath(version string) string {
	return c.BinaryPath(kubernetesComponent(version), "kubectl")
}

func kubernetesComponent(version string) Component {
	cmds := []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy", "kubectl"}
	k8s := Component{
		Name:      Kubernetes,
		Module:    "k8s.io/kubernetes",
		Version:   version,
		ColdBuild: 8 * time.Minute,
		Subdir:    Kubernetes + "-" + version,
		recipe:    k8sWrapperRecipe(),
		ldflags:   k8sLDFlags(version),
		verify: verifySpec{
			binary: "kubectl",
			args:   []string{"version", "--client"},
			want:   version,
		},
	}
	for _, c := range cmds {
		k8s.packages = append(k8s.packages, "k8s.io/kubernetes/cmd/"+c)
	}
	k8s.Binaries = binaryNames(k8s.packages)
	return k8s
}

// adoptFlatKubernetes moves a Kubernetes build from the flat layout of earlier cnibench
// versions (binaries directly in bin/, stamp "kubernetes") into its release's directory, when
// its stamp says it is exactly the build comp's recipe would produce: a user who upgrades keeps
// the minutes that build took instead of paying them again.
func (c Cache) adoptFlatKubernetes(comp Component) error {
	old := Component{Name: comp.Name, Version: comp.Version, recipe: comp.recipe, Module: comp.Module,
		packages: comp.packages, Binaries: comp.Binaries, tags: comp.tags, ldflags: comp.ldflags}
	if comp.Subdir == "" || !c.stampMatches(old) || len(c.absent(old)) > 0 {
		return nil
	}
	if err := os.MkdirAll(filepath.Join(c.BinDir(), comp.Subdir), 0o755); err != nil {
		return fmt.Errorf("adopt the cached kubernetes %s: %w", comp.Version, err)
	}
	for _, b := range comp.Binaries {
		if err := os.Rename(c.Path(b), c.BinaryPath(comp, b)); err != nil {
			return fmt.Errorf("adopt the cached kubernetes %s: %w", comp.Version, err)
		}
	}
	if err := c.writeStamp(comp); err != nil {
		return err
	}
	return c.removeStamp(old)
}
