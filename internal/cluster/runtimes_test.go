package cluster

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/cnibench/cnibench/internal/cluster/binaries"
	"github.com/cnibench/cnibench/internal/lab"
)

func TestNormalizeRuntimes(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want []string
		err  string
	}{
		{nil, []string{"runc", "crun"}, ""},
		{[]string{"runsc"}, []string{"runc", "runsc"}, ""},
		{[]string{"runsc", "crun", "runc", "crun"}, []string{"runc", "crun", "runsc"}, ""},
		{[]string{"kata"}, nil, `runtimes: "kata": with CRI containerd, expected handlers from runc, crun, runsc, youki`},
	} {
		got, err := normalizeRuntimes(lab.CRIContainerd, c.in)
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("%v: error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%v: got %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	if got, err := normalizeRuntimes(lab.CRICrio, nil); err != nil || !reflect.DeepEqual(got, []string{"runc"}) {
		t.Errorf("CRI-O's default handlers: %v, %v", got, err)
	}
	if _, err := normalizeRuntimes(lab.CRICrio, []string{"crun"}); err == nil {
		t.Error("crun under CRI-O: want an error")
	}
	if got := (Spec{}).Handlers(); !reflect.DeepEqual(got, lab.DefaultRuntimes()) {
		t.Errorf("state without runtimes offers %v, want the defaults", got)
	}
}

// The runtime table names each handler once, with its state under the node's directory; runsc
// gets a shim configuration naming the cached runsc and the platform.
func TestRuntimeSections(t *testing.T) {
	dir := t.TempDir()
	l, s := Layout{Root: dir}, Spec{LocalConfig: lab.LocalConfig{Name: "t"}, Runtimes: lab.RuntimeHandlers()}
	n := nodeOf(s, l, 1)
	if err := os.MkdirAll(n.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := runtimeSections(s, l, binPaths{cache: binaries.Cache{Dir: "/cache"}}, n)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range lab.RuntimeHandlers() {
		if n := strings.Count(out, `containerd.runtimes.`+h+`]`); n != 1 {
			t.Errorf("handler %s appears %d times:\n%s", h, n, out)
		}
	}
	for _, want := range []string{
		`Root = "` + filepath.Join(n.dir, "runc") + `"`,
		`BinaryName = "` + filepath.Join(l.Dir("t"), "bin", "crun") + `"`,
		`runtime_type = "io.containerd.runsc.v1"`,
		`ConfigPath = "` + filepath.Join(n.dir, "runsc.toml") + `"`,
		`BinaryName = "/cache/bin/youki"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %s in:\n%s", want, out)
		}
	}
	conf, err := os.ReadFile(filepath.Join(n.dir, "runsc.toml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`binary_name = "/cache/bin/runsc"`, `root = "` + filepath.Join(n.dir, "runsc") + `"`, `platform = "systrap"`} {
		if !strings.Contains(string(conf), want) {
			t.Errorf("runsc.toml lacks %s:\n%s", want, conf)
		}
	}
}

// A CRI-O cluster needs CRI-O built, whatever its handlers; gVisor's handler needs runsc.
func TestRuntimeComponents(t *testing.T) {
	names := func(cri string, handlers ...string) []string {
		comps, err := runtimeComponents(cri, handlers)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range comps {
			out = append(out, c.Name)
		}
		return out
	}
	if got := names(lab.CRICrio, lab.RuntimeRunc); !reflect.DeepEqual(got, []string{binaries.CRIO}) {
		t.Errorf("CRI-O with runc builds %v", got)
	}
	if got := names(lab.CRIContainerd, lab.RuntimeRunc, lab.RuntimeCrun); len(got) != 0 {
		t.Errorf("containerd with runc and crun builds %v", got)
	}
	if got := names(lab.CRIContainerd, lab.RuntimeRunsc, lab.RuntimeYouki); !reflect.DeepEqual(got, []string{binaries.GVisor, binaries.Youki}) {
		t.Errorf("runsc and youki build %v", got)
	}
}

// CRI-O's signature policy is JSON it parses at start: with the lab registry it accepts that
// registry's images beside the local ones, and rejects every other registry either way.
func TestCRIOPolicyAcceptsOnlyTheLab(t *testing.T) {
	for _, registry := range []string{"", "10.201.0.200:5000"} {
		var p struct {
			Default    []map[string]string
			Transports map[string]map[string][]map[string]string
		}
		if err := json.Unmarshal([]byte(crioPolicy(registry)), &p); err != nil {
			t.Fatalf("registry %q: %v\n%s", registry, err, crioPolicy(registry))
		}
		if len(p.Default) != 1 || p.Default[0]["type"] != "reject" {
			t.Errorf("registry %q: default %v, want reject", registry, p.Default)
		}
		docker := p.Transports["docker"]
		want := map[string]bool{"cnibench.local": true}
		if registry != "" {
			want[registry] = true
		}
		if len(docker) != len(want) {
			t.Errorf("registry %q: docker scopes %v, want %v", registry, docker, want)
		}
		for scope, reqs := range docker {
			if !want[scope] || len(reqs) != 1 || reqs[0]["type"] != "insecureAcceptAnything" {
				t.Errorf("registry %q: docker scope %s: %v", registry, scope, reqs)
			}
		}
	}
}

// containerd reads the lab registry's hosts.toml at every pull: TOML naming the registry over
// HTTPS with the cluster's CA.
func TestHostsTOMLNamesTheRegistryAndCA(t *testing.T) {
	var h struct {
		Server string
		Host   map[string]struct {
			Capabilities []string
			CA           string `toml:"ca"`
		}
	}
	if _, err := toml.Decode(hostsTOML("10.201.0.200:5000", "/s/pki/ca.crt"), &h); err != nil {
		t.Fatal(err)
	}
	host, ok := h.Host["https://10.201.0.200:5000"]
	if h.Server != "https://10.201.0.200:5000" || !ok || host.CA != "/s/pki/ca.crt" || !slices.Equal(host.Capabilities, []string{"pull", "resolve"}) {
		t.Errorf("hosts.toml decodes to %+v", h)
	}
}

// The runtime handler table has one entry per handler the vocabulary names, in its order;
// each handler's version comes from the binary it runs (the cached one when built, the host's
// otherwise), and its fingerprint notes what sets it apart.
func TestRuntimeHandlerTable(t *testing.T) {
	var names []string
	for _, h := range runtimeHandlers() {
		names = append(names, h.Name)
	}
	if !slices.Equal(names, lab.RuntimeHandlers()) {
		t.Errorf("table's handlers %v, want %v", names, lab.RuntimeHandlers())
	}
	cache := binaries.Cache{Dir: "/cache"}
	for name, want := range map[string][]string{
		lab.RuntimeRunc:  {"runc", "--version"},
		lab.RuntimeCrun:  {"crun", "--version"},
		lab.RuntimeRunsc: {"/cache/bin/runsc", "--version"},
		lab.RuntimeYouki: {"/cache/bin/youki", "--version"},
	} {
		h, err := LookupRuntime(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := h.VersionCommand(cache); !slices.Equal(got, want) {
			t.Errorf("%s's version command %v, want %v", name, got, want)
		}
	}
	runsc, _ := LookupRuntime(lab.RuntimeRunsc)
	if got := runsc.Fingerprint(); got["oci_runtime"] != "runsc" || got["gvisor_platform"] != GVisorPlatform {
		t.Errorf("runsc's fingerprint %v", got)
	}
	if _, err := LookupRuntime("kata"); err == nil || !strings.Contains(err.Error(), `"kata": expected one of runc, crun, runsc, youki`) {
		t.Errorf("LookupRuntime(kata) = %v", err)
	}
}
