package binaries

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// Calico's module is published by the proxy only as a pseudo-version of its release-v3.28
// branch (no tagged v3 module path exists); this is that branch's tip, whose sources are
// v3.28.5 plus fixes. CalicoVersion is what the binaries report and the fingerprint records.
const (
	calicoModule        = "github.com/projectcalico/calico"
	calicoModuleVersion = "v1.11.0-cni-plugin.0.20250813170300-a0db560f0520"
	// CalicoVersion is the release the branch tip follows, with its commit.
	CalicoVersion = "v3.28.5+a0db560f0520"
	// calicoAPIVersion is the projectcalico/api module the branch's go.mod points at as a
	// directory (./api) that the module zip lacks; this is the proxy's pseudo-version of the
	// same API at the branch's time.
	calicoAPIModule  = "github.com/projectcalico/api"
	calicoAPIVersion = "v0.0.0-20240708202104-e3f70b269c2c"
)

// Calico is the component holding calico-node (felix inside), the calico CNI plugin and its
// IPAM plugin, and Calico's CRDs.
const Calico = "calico"

// Files of the calico component in the cache's bin dir. The CNI plugin and the IPAM plugin are
// one binary that picks its role from its file name, as upstream installs it.
const (
	CalicoNodeBinary = "calico-node"
	CalicoCNIBinary  = "calico"
	CalicoIPAMBinary = "calico-ipam"
	// CalicoCRDs is manifests/crds.yaml of the same sources: the CRDs of the Kubernetes
	// datastore (IP pools, blocks, Felix configuration, ...), applied by a cluster's create.
	CalicoCRDs = "calico-crds.yaml"
)

// calicoComponents are the binaries of the calico and canal datapaths.
func calicoComponents() []Component {
	c := Component{
		Name:    Calico,
		Module:  calicoModule,
		Version: calicoModuleVersion,
		// Measured: 6 min 11 s on the 2-core target with a warm module cache and a cold build
		// cache, nearly all of it calico-node (felix, libcalico-go, client-go); libbpf adds 42 s.
		ColdBuild: 7 * time.Minute,
		recipe:    calicoRecipe(),
		ldflags: "-s -w" +
			" -X " + calicoModule + "/node/buildinfo.GitVersion=" + CalicoVersion +
			" -X " + calicoModule + "/node/pkg/lifecycle/startup.VERSION=" + CalicoVersion +
			" -X main.VERSION=" + CalicoVersion,
		// packages only feeds the recipe hash: the replace is part of the recipe.
		packages: []string{calicoAPIModule + "@" + calicoAPIVersion},
		Binaries: []string{CalicoNodeBinary, CalicoCNIBinary, CalicoIPAMBinary, CalicoCRDs},
		verify: verifySpec{
			binary: CalicoNodeBinary,
			args:   []string{"-v"},
			want:   CalicoVersion,
		},
	}
	pkgs := []string{calicoNodeTarget().pkg + "[cgo]"}
	for _, t := range calicoTargets() {
		pkgs = append(pkgs, t.pkg)
	}
	c.packages = append(pkgs, c.packages...)
	return []Component{c}
}

// calicoTargets are the binaries the calico component builds with cgo off; calico-ipam is a
// copy of the plugin.
func calicoTargets() []goBinary {
	return []goBinary{{name: CalicoCNIBinary, pkg: "./cni-plugin/cmd/calico"}}
}

// calicoNodeTarget is calico-node, built with cgo as upstream's image has it: felix's BPF
// packages call libbpf, and a build without cgo has stubs that panic. Felix reaches them in
// every dataplane: in the iptables one its start-up removes a connect-time load balancer a
// BPF felix may have left, which succeeds on a host with bpftool and then panics.
func calicoNodeTarget() goBinary {
	return goBinary{name: CalicoNodeBinary, pkg: "./node/cmd/calico-node"}
}

// calicoNodeTools and calicoNodeHeaders are what calico-node's cgo build needs beyond Go, with
// the Debian package of each.
func calicoNodeTools() map[string]string { return map[string]string{"make": "make", "gcc": "gcc"} }

func calicoNodeHeaders() map[string]string {
	return map[string]string{"/usr/include/gelf.h": "libelf-dev", "/usr/include/zlib.h": "zlib1g-dev", "/usr/include/pcap.h": "libpcap-dev"}
}

// calicoRecipe builds the calico component: a module copy whose replace of the API
// module points at the proxy's version, two go builds, and copies of the plugin and the CRDs.
// Its name is the one it printed as build kind 105: existing stamps hold it.
func calicoRecipe() recipe { return plainRecipe("kind-105", buildCalico) }

// buildCalico builds calico-node (with cgo, against the bundled libbpf) and the CNI plugin in a
// writable copy of the module whose ./api replace (a directory the zip lacks) points at the
// proxy's API module: the one change the sources need to build here.
func buildCalico(ctx context.Context, log io.Writer, comp Component, scratch, out string) error {
	if err := prereqError(Calico, missingPrereqs(calicoNodeTools(), calicoNodeHeaders())); err != nil {
		return err
	}
	src, err := writableModule(ctx, log, comp, scratch)
	if err != nil {
		return err
	}
	replace := "-replace=" + calicoAPIModule + "=" + calicoAPIModule + "@" + calicoAPIVersion
	if err := runGo(ctx, log, src, goEnv(), nil, "mod", "edit", replace); err != nil {
		return fmt.Errorf("point %s at the proxy: %w", calicoAPIModule, err)
	}
	fmt.Fprintf(log, "# go mod edit %s\n", replace)
	if err := buildBinaries(ctx, log, comp, src, out, calicoTargets()...); err != nil {
		return err
	}
	if err := buildLibbpf(ctx, log, src); err != nil {
		return err
	}
	node := calicoNodeTarget()
	args := []string{"build", "-trimpath", "-ldflags", comp.ldflags, "-o", filepath.Join(out, node.name), node.pkg}
	if err := runGo(ctx, log, src, goEnv("CGO_ENABLED=1"), nil, args...); err != nil {
		return fmt.Errorf("build %s: %w", node.name, err)
	}
	copies := []struct {
		from, to string
		mode     os.FileMode
	}{
		{filepath.Join(out, CalicoCNIBinary), filepath.Join(out, CalicoIPAMBinary), 0o755},
		{filepath.Join(src, "manifests", "crds.yaml"), filepath.Join(out, CalicoCRDs), 0o644},
	}
	for _, cp := range copies {
		if err := copyFile(cp.from, cp.to, cp.mode); err != nil {
			return fmt.Errorf("copy %s: %w", filepath.Base(cp.to), err)
		}
	}
	return nil
}
