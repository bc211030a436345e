package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/internal/cluster/binaries"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/setting"
)

// GVisorPlatform is the gVisor platform the runsc handler uses: systrap works on this kind of
// machine (and is upstream's default); kvm fails at vCPU setup without nested virtualisation.
const GVisorPlatform = "systrap"

// normalizeRuntimes validates a list of handlers for a CRI and returns it in RuntimeHandlers
// order, with runc always present (it is the default handler every pod without a RuntimeClass
// uses).
func normalizeRuntimes(cri string, list []string) ([]string, error) {
	offered := lab.HandlersFor(cri)
	if len(list) == 0 {
		return lab.DefaultRuntimes()[:min(len(offered), len(lab.DefaultRuntimes()))], nil
	}
	for _, r := range list {
		if !slices.Contains(offered, r) {
			return nil, &setting.Error{Name: "runtimes", Value: strconv.Quote(r), Want: fmt.Sprintf("with CRI %s, expected handlers from %s", cri, strings.Join(offered, ", "))}
		}
	}
	var out []string
	for _, r := range lab.RuntimeHandlers() {
		if r == lab.RuntimeRunc || slices.Contains(list, r) {
			out = append(out, r)
		}
	}
	return out, nil
}

// Handlers returns the runtime handlers the cluster offers; state written before they were
// selectable offered the defaults.
func (s Spec) Handlers() []string {
	if len(s.Runtimes) == 0 {
		return lab.DefaultRuntimes()
	}
	return s.Runtimes
}

// ContainerRuntime is the nodes' CRI; state written before CRI-O ran containerd.
func (s Spec) ContainerRuntime() string {
	if s.CRI == "" {
		return lab.CRIContainerd
	}
	return s.CRI
}

// runtimeComponents are the components the CRI and the handlers need built.
func runtimeComponents(cri string, handlers []string) ([]binaries.Component, error) {
	var need []string
	if cri == lab.CRICrio {
		need = append(need, binaries.CRIOBinary, binaries.PinnsBinary)
	}
	if slices.Contains(handlers, lab.RuntimeRunsc) {
		need = append(need, binaries.RunscBinary, binaries.RunscShimBinary)
	}
	if slices.Contains(handlers, lab.RuntimeYouki) {
		need = append(need, binaries.YoukiBinary)
	}
	return binaries.Providing(need)
}

// handlerRoot is where a handler keeps its containers' state on node i: under the node's
// directory, so that it is removed with the cluster and tests can find each container there.
func (c *creator) handlerRoot(i int, handler string) string {
	return filepath.Join(c.nodeDir(i), handler)
}

// runtimeSections renders the containerd runtime table entries of the cluster's handlers.
func (c *creator) runtimeSections(i int) (string, error) {
	var b strings.Builder
	const prefix = `    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.`
	for _, h := range c.spec.Handlers() {
		switch h {
		case lab.RuntimeRunc, lab.RuntimeCrun, lab.RuntimeYouki:
			// youki speaks runc's command line, so containerd's runc shim drives it as is.
			binary := "runc"
			switch h {
			case lab.RuntimeCrun:
				var err error
				if binary, err = c.writeCrunWrapper(); err != nil {
					return "", err
				}
			case lab.RuntimeYouki:
				binary = c.bin(binaries.YoukiBinary)
			}
			fmt.Fprintf(&b, "%s%s]\n      runtime_type = \"io.containerd.runc.v2\"\n", prefix, h)
			fmt.Fprintf(&b, "%s%s.options]\n        BinaryName = %q\n        Root = %q\n        SystemdCgroup = false\n",
				prefix, h, binary, c.handlerRoot(i, h))
		case lab.RuntimeRunsc:
			conf, err := c.writeRunscConfig(i)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(&b, "%s%s]\n      runtime_type = \"io.containerd.runsc.v1\"\n", prefix, h)
			fmt.Fprintf(&b, "%s%s.options]\n        TypeUrl = \"io.containerd.runsc.v1.options\"\n        ConfigPath = %q\n",
				prefix, h, conf)
		}
	}
	return b.String(), nil
}

// writeRunscConfig writes node i's gVisor shim configuration: the runsc binary from the cache,
// its state under the node's directory, and the platform.
func (c *creator) writeRunscConfig(i int) (string, error) {
	root := c.handlerRoot(i, lab.RuntimeRunsc)
	if err := os.MkdirAll(root, 0o711); err != nil {
		return "", fmt.Errorf("node %d: runsc root: %w", i, err)
	}
	conf := fmt.Sprintf(`binary_name = %q
root = %q

[runsc_config]
  platform = %q
`, c.bin(binaries.RunscBinary), root, GVisorPlatform)
	path := filepath.Join(c.nodeDir(i), "runsc.toml")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return "", fmt.Errorf("write runsc config of node %d: %w", i, err)
	}
	return path, nil
}
