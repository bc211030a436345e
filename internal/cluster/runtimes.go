package cluster

import (
	"fmt"
	"maps"
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

// RuntimeHandler is one OCI runtime handler a local cluster can offer, with what the cluster
// and a run need to know of it: where its binary comes from, how the nodes' containerd runs
// it, and what a run's fingerprint records of it. Adding a handler is one entry in
// runtimeHandlers (and its name in lab.RuntimeHandlers).
type RuntimeHandler struct {
	// Name is the handler's, and its RuntimeClass's, name (lab.RuntimeHandlers).
	Name string
	// Binary is its OCI runtime: a program of the host's packages, or a binary of the cache
	// when Build names it.
	Binary string
	// Build are the cached binaries it needs built on first use; none for the host's.
	Build []string
	// Wrapper, when set, is a script the nodes run in Binary's place: the cluster writes it
	// into its directory as bin/<Name>.
	Wrapper string
	// Shim is the containerd runtime type that drives it: runc's shim drives any runtime with
	// runc's command line; gVisor has a shim of its own.
	Shim string
	// Notes are what a run's fingerprint records of it beyond its name and version.
	Notes map[string]string
}

// containerd runtime types (RuntimeHandler.Shim).
const (
	shimRunc  = "io.containerd.runc.v2"
	shimRunsc = "io.containerd.runsc.v1"
)

// runtimeHandlers is the table of the handlers, in lab.RuntimeHandlers order.
func runtimeHandlers() []RuntimeHandler {
	return []RuntimeHandler{
		{Name: lab.RuntimeRunc, Binary: "runc", Shim: shimRunc},
		{Name: lab.RuntimeCrun, Binary: "crun", Wrapper: crunWrapper, Shim: shimRunc,
			Notes: map[string]string{"oci_runtime_note": "Debian crun in a private mount namespace without the cgroup2 mount (hybrid host)"}},
		{Name: lab.RuntimeRunsc, Binary: binaries.RunscBinary, Build: []string{binaries.RunscBinary, binaries.RunscShimBinary}, Shim: shimRunsc,
			Notes: map[string]string{"gvisor_platform": GVisorPlatform}},
		// youki speaks runc's command line, so containerd's runc shim drives it as is.
		{Name: lab.RuntimeYouki, Binary: binaries.YoukiBinary, Build: []string{binaries.YoukiBinary}, Shim: shimRunc},
	}
}

// LookupRuntime returns the runtime handler called name.
func LookupRuntime(name string) (RuntimeHandler, error) {
	for _, h := range runtimeHandlers() {
		if h.Name == name {
			return h, nil
		}
	}
	return RuntimeHandler{}, &setting.Error{Name: "runtimes", Value: strconv.Quote(name), Want: "expected one of " + strings.Join(lab.RuntimeHandlers(), ", ")}
}

// BinaryPath is the handler's OCI runtime binary, as the binaries cache holds it or, for a
// host program, its name.
func (h RuntimeHandler) BinaryPath(cache binaries.Cache) string {
	if len(h.Build) > 0 {
		return cache.Path(h.Binary)
	}
	return h.Binary
}

// VersionCommand is the command line that prints the handler's version on its first line.
func (h RuntimeHandler) VersionCommand(cache binaries.Cache) []string {
	return []string{h.BinaryPath(cache), "--version"}
}

// Fingerprint is what a run records of the handler besides its version: its name
// (oci_runtime) and its Notes.
func (h RuntimeHandler) Fingerprint() map[string]string {
	facts := map[string]string{"oci_runtime": h.Name}
	maps.Copy(facts, h.Notes)
	return facts
}

// runtimeComponents are the components the CRI and the handlers need built.
func runtimeComponents(cri string, handlers []string) ([]binaries.Component, error) {
	var need []string
	if cri == lab.CRICrio {
		need = append(need, binaries.CRIOBinary, binaries.PinnsBinary)
	}
	for _, h := range runtimeHandlers() {
		if slices.Contains(handlers, h.Name) {
			need = append(need, h.Build...)
		}
	}
	return binaries.Providing(need)
}

// runtimeSections renders the containerd runtime table entries of the cluster's handlers on
// node n, writing what they run from (a wrapper, gVisor's configuration) first.
func runtimeSections(s Spec, l Layout, bins binPaths, n node) (string, error) {
	var b strings.Builder
	const prefix = `    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.`
	for _, name := range s.Handlers() {
		h, err := LookupRuntime(name)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "%s%s]\n      runtime_type = %q\n", prefix, h.Name, h.Shim)
		if h.Shim == shimRunsc {
			conf, err := writeRunscConfig(n, bins.bin(h.Binary))
			if err != nil {
				return "", err
			}
			fmt.Fprintf(&b, "%s%s.options]\n        TypeUrl = \"io.containerd.runsc.v1.options\"\n        ConfigPath = %q\n",
				prefix, h.Name, conf)
			continue
		}
		binary := h.BinaryPath(bins.cache)
		if h.Wrapper != "" {
			if binary, err = writeWrapper(l.Dir(s.Name), h); err != nil {
				return "", err
			}
		}
		fmt.Fprintf(&b, "%s%s.options]\n        BinaryName = %q\n        Root = %q\n        SystemdCgroup = false\n",
			prefix, h.Name, binary, n.handlerRoot(h.Name))
	}
	return b.String(), nil
}

// writeWrapper writes a handler's wrapper into the cluster's directory, dir.
func writeWrapper(dir string, h RuntimeHandler) (string, error) {
	path := filepath.Join(dir, "bin", h.Name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("write %s wrapper: %w", h.Name, err)
	}
	if err := os.WriteFile(path, []byte(h.Wrapper), 0o755); err != nil {
		return "", fmt.Errorf("write %s wrapper: %w", h.Name, err)
	}
	return path, nil
}

// writeRunscConfig writes node n's gVisor shim configuration: the runsc binary, its state
// under the node's directory, and the platform.
func writeRunscConfig(n node, runsc string) (string, error) {
	root := n.handlerRoot(lab.RuntimeRunsc)
	if err := os.MkdirAll(root, 0o711); err != nil {
		return "", fmt.Errorf("node %d: runsc root: %w", n.index, err)
	}
	conf := fmt.Sprintf(`binary_name = %q
root = %q

[runsc_config]
  platform = %q
`, runsc, root, GVisorPlatform)
	path := filepath.Join(n.dir, "runsc.toml")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return "", fmt.Errorf("write runsc config of node %d: %w", n.index, err)
	}
	return path, nil
}
