package binaries

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/lab"
)

// Pinned versions. The Go module proxy serves only some versions of these
// modules (Kubernetes v1.32.x lacks staging modules there, for example), so
// these are versions verified to build on the target machine.
const (
	// CoreDNSVersion is the CoreDNS release used as cluster DNS.
	CoreDNSVersion = "v1.15.0"
	// CNIPluginsVersion is the containernetworking/plugins release.
	CNIPluginsVersion = "v1.9.1"
	// ContainerdVersion is the containerd release run on every node.
	ContainerdVersion = "v2.1.5"
)

// Component names, as used in Lookup, stamps and log file names.
const (
	Kubernetes = "kubernetes"
	CoreDNS    = "coredns"
	CNIPlugins = "cni-plugins"
	Containerd = "containerd"
)

// PauseBinary is the name of the sandbox (pause) binary that scripts/setup.sh
// builds from cmd/cnb-pause into the cache's bin directory. It is not a
// Component because it comes from this repository, not the module proxy.
const PauseBinary = "cnb-pause"

// recipeRevision is mixed into every recipe hash so that a change to how this
// package builds things (not visible in the table) still invalidates stamps.
const recipeRevision = "1"

// Component is one group of third-party binaries built together from one
// module at one pinned version.
type Component struct {
	// Name identifies the component (see the Kubernetes, CoreDNS, ...
	// constants).
	Name string
	// Module is the Go module path the binaries come from.
	Module string
	// Version is the pinned module version.
	Version string
	// Binaries are the file names the build puts into the cache's bin dir.
	Binaries []string
	// ColdBuild is a rough build time with empty Go caches on the 2-core
	// target machine, shown so a long build does not look hung.
	ColdBuild time.Duration
	// Subdir, when set, is the directory below the cache's bin dir that
	// holds the binaries, so that several versions of one component (the
	// Kubernetes releases) sit side by side; it also keys the stamp and log.
	Subdir string

	// recipe builds the component (see recipes.go); its name is part of
	// the recipe hash.
	recipe recipe
	// packages are full import paths (goInstallRecipe, k8sWrapperRecipe)
	// or paths relative to the module root such as "./cmd/ctr"
	// (moduleCopyRecipe). Each package's last element is the binary name.
	// Components with recipes of their own may record anything here that
	// should rebuild them when it changes.
	packages []string
	tags     []string
	ldflags  string
	// verify is run on a freshly built binary before it is installed, so a
	// binary that cannot even start is never stamped as good.
	verify verifySpec
}

// verifySpec describes a smoke test of one built binary.
type verifySpec struct {
	binary string
	args   []string
	env    []string
	// want must appear in the combined output.
	want string
}

// Components returns the table of every component the local cluster needs,
// in the order they should be built (cheapest first, so quick failures such
// as a proxy refusal show up early).
func Components() []Component {
	all := []Component{cniPluginsComponent(), corednsComponent(), containerdComponent()}
	for _, v := range lab.KubernetesVersions() {
		all = append(all, kubernetesComponent(v))
	}
	// Datapath, runtime and ingress components live in files of their own, beside
	// their recipes (flannel.go, cilium.go, calico.go, calicobpf.go, crio.go, gvisor.go, youki.go,
	// gateway.go, k6.go, stream.go, multus.go).
	all = append(all, flannelComponents()...)
	all = append(all, ciliumComponents()...)
	all = append(all, calicoComponents()...)
	all = append(all, calicoBPFComponents()...)
	all = append(all, crioComponents()...)
	all = append(all, gvisorComponents()...)
	all = append(all, youkiComponents()...)
	all = append(all, gatewayComponents()...)
	all = append(all, envoyGatewayComponents()...)
	all = append(all, k6Components()...)
	all = append(all, streamComponents()...)
	all = append(all, multusComponents()...)
	return append(all, registryComponents()...)
}

// cniPluginsComponent is the CNI reference plugins the datapaths chain.
func cniPluginsComponent() Component {
	cniPkgs := []string{
		"main/bridge", "main/ptp", "main/macvlan", "main/loopback",
		"ipam/host-local",
		"meta/bandwidth", "meta/portmap", "meta/firewall", "meta/tuning",
	}
	cni := Component{
		Name:      CNIPlugins,
		Module:    "github.com/containernetworking/plugins",
		Version:   CNIPluginsVersion,
		ColdBuild: 30 * time.Second,
		recipe:    goInstallRecipe(),
		ldflags:   "-s -w",
		verify: verifySpec{
			binary: "bridge",
			env:    []string{"CNI_COMMAND=VERSION"},
			want:   "supportedVersions",
		},
	}
	for _, p := range cniPkgs {
		cni.packages = append(cni.packages, "github.com/containernetworking/plugins/plugins/"+p)
	}
	cni.Binaries = binaryNames(cni.packages)
	return cni
}

// containerdComponent is containerd, its runc shim and ctr.
func containerdComponent() Component {
	const ctdModule = "github.com/containerd/containerd/v2"
	ctd := Component{
		Name:      Containerd,
		Module:    ctdModule,
		Version:   ContainerdVersion,
		ColdBuild: 2 * time.Minute,
		recipe:    moduleCopyRecipe(),
		packages:  []string{"./cmd/containerd", "./cmd/containerd-shim-runc-v2", "./cmd/ctr"},
		// The cluster uses the overlayfs snapshotter only. btrfs needs cgo
		// (CGO_ENABLED=0 drops it anyway; the tag says so explicitly),
		// devmapper and zfs are pure Go but would only add size and plugins
		// that fail to initialise. urfave_cli_no_docs is upstream's default
		// and drops the man page generator.
		tags: []string{"no_btrfs", "no_devmapper", "no_zfs", "urfave_cli_no_docs"},
		// Upstream's Makefile sets the version from git, which a module zip
		// lacks; without it the binary reports "2.1.5+unknown".
		ldflags: "-s -w -X " + ctdModule + "/version.Version=" + ContainerdVersion,
		verify: verifySpec{
			binary: "containerd",
			args:   []string{"--version"},
			want:   ContainerdVersion,
		},
	}
	ctd.Binaries = binaryNames(ctd.packages)
	return ctd
}

// corednsComponent is CoreDNS, the clusters' DNS.
func corednsComponent() Component {
	coredns := Component{
		Name:      CoreDNS,
		Module:    "github.com/coredns/coredns",
		Version:   CoreDNSVersion,
		ColdBuild: 2 * time.Minute,
		recipe:    goInstallRecipe(),
		ldflags:   "-s -w",
		packages:  []string{"github.com/coredns/coredns"},
		verify: verifySpec{
			binary: "coredns",
			args:   []string{"-version"},
			want:   strings.TrimPrefix(CoreDNSVersion, "v"),
		},
	}
	coredns.Binaries = binaryNames(coredns.packages)
	return coredns
}

// Lookup returns the component with the given name; for Kubernetes, the
// default release (KubernetesComponent selects another).
func Lookup(name string) (Component, error) {
	if name == Kubernetes {
		return kubernetesComponent(lab.DefaultKubernetesVersion), nil
	}
	var names []string
	for _, c := range Components() {
		if c.Name == name {
			return c, nil
		}
		names = append(names, c.Name)
	}
	return Component{}, fmt.Errorf("unknown component %q (known: %s)", name, strings.Join(names, ", "))
}

// Base returns what every local cluster runs, whatever its datapath: CNI plugins, CoreDNS,
// containerd, the tools every tools image carries (ImageTools: STREAM) and the given
// Kubernetes release.
func Base(kubernetesVersion string) ([]Component, error) {
	k8s, err := KubernetesComponent(kubernetesVersion)
	if err != nil {
		return nil, err
	}
	var out []Component
	names := []string{CNIPlugins, CoreDNS, Containerd}
	for _, t := range ImageTools() {
		if !t.Split { // every tools image carries it
			names = append(names, t.Component)
		}
	}
	for _, name := range names {
		c, err := Lookup(name)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return append(out, k8s), nil
}

// Providing returns the components that build the named binaries, in
// build order, each once; a name no component builds is an error.
func Providing(binaries []string) ([]Component, error) {
	var out []Component
	for _, name := range binaries {
		found := false
		for _, c := range Components() {
			if c.Subdir == "" && slices.Contains(c.Binaries, name) {
				found = true
				if !slices.ContainsFunc(out, func(o Component) bool { return o.Name == c.Name }) {
					out = append(out, c)
				}
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("no component builds %q", name)
		}
	}
	return out, nil
}

// k8sLDFlags stamps the version into the binaries the same way the upstream
// release build does, so `kubectl version` and the apiserver's /version report
// the real release instead of v0.0.0.
func k8sLDFlags(version string) string {
	major, minor := "", ""
	if parts := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3); len(parts) >= 2 {
		major, minor = parts[0], parts[1]
	}
	return "-s -w" +
		" -X k8s.io/component-base/version.gitVersion=" + version +
		" -X k8s.io/component-base/version.gitMajor=" + major +
		" -X k8s.io/component-base/version.gitMinor=" + minor +
		" -X k8s.io/client-go/pkg/version.gitVersion=" + version
}

// RecipeHash is a short digest of everything that determines the component's
// build output. It is stored in the stamp so that any change to the recipe,
// not just the version, triggers a rebuild.
func (c Component) RecipeHash() string {
	var b strings.Builder
	fmt.Fprintf(&b, "rev=%s\nname=%s\nkind=%s\nmodule=%s\nversion=%s\n",
		recipeRevision, c.Name, c.recipe.name, c.Module, c.Version)
	fmt.Fprintf(&b, "packages=%s\nbinaries=%s\ntags=%s\nldflags=%s\n",
		strings.Join(c.packages, ","), strings.Join(c.Binaries, ","),
		strings.Join(c.tags, ","), c.ldflags)
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])[:16]
}

// stampContent is what the component's stamp file holds after a successful
// build of the current recipe.
func (c Component) stampContent() string {
	return c.Version + " " + c.RecipeHash() + "\n"
}

// describe is the human summary used in progress lines.
func (c Component) describe() string {
	unit := "binaries"
	if len(c.Binaries) == 1 {
		unit = "binary"
	}
	return fmt.Sprintf("%s %s (%d %s, %s cold)", c.Name, c.Version, len(c.Binaries), unit, estimate(c.ColdBuild))
}

// estimate prints a rough duration the way people say it: "~6 min", "~30 s".
func estimate(d time.Duration) string {
	if d >= time.Minute {
		return fmt.Sprintf("~%d min", int(d.Round(time.Minute)/time.Minute))
	}
	return fmt.Sprintf("~%d s", int(d.Round(time.Second)/time.Second))
}
