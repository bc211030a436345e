package layering

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is this module's path, which the rules' internal/ and cmd/ patterns are under.
const module = "github.com/cnibench/cnibench"

// rule forbids the packages matching any of from to depend on a package matching forbid.
type rule struct {
	from   []string
	forbid string
	why    string
}

// graph is an import graph: each package's direct imports, test files left out.
type graph map[string][]string

// violation is a forbidden dependency and the chain of imports that makes it, from the
// package the rule is about to the forbidden one.
type violation struct {
	rule  rule
	chain []string
}

func (v violation) String() string {
	short := make([]string, len(v.chain))
	for i, p := range v.chain {
		short[i] = strings.TrimPrefix(p, module+"/")
	}
	return fmt.Sprintf("%s depends on %s (forbidden: %s): %s", short[0], short[len(short)-1], v.rule.why, strings.Join(short, " -> "))
}

// expand turns a rule pattern into an import path pattern.
func expand(pattern string) string {
	if strings.HasPrefix(pattern, "internal/") || strings.HasPrefix(pattern, "cmd/") {
		return module + "/" + pattern
	}
	return pattern
}

// matches tells whether the import path p matches pattern (see rules).
func matches(pattern, p string) bool {
	pattern = expand(pattern)
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return p == base || strings.HasPrefix(p, base+"/")
	}
	return p == pattern
}

// sources are the packages of g that r is about, sorted.
func (r rule) sources(g graph) []string {
	var out []string
	for p := range g {
		if slices.ContainsFunc(r.from, func(pattern string) bool { return matches(pattern, p) }) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// check returns every broken rule: for each package a rule is about, the first forbidden
// package found breadth first, so that the chain shown is a shortest one.
func check(g graph, rules []rule) []violation {
	var out []violation
	for _, r := range rules {
		for _, src := range r.sources(g) {
			if chain := find(g, src, func(p string) bool { return matches(r.forbid, p) }); chain != nil {
				out = append(out, violation{rule: r, chain: chain})
			}
		}
	}
	return out
}

// find searches g breadth first from src (itself excluded) for a package that bad accepts,
// and returns the chain of imports leading to it; nil when none does.
func find(g graph, src string, bad func(string) bool) []string {
	parent := map[string]string{src: ""}
	queue := []string{src}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, imp := range g[p] {
			if _, seen := parent[imp]; seen {
				continue
			}
			parent[imp] = p
			if bad(imp) {
				chain := []string{imp}
				for q := p; q != ""; q = parent[q] {
					chain = append(chain, q)
				}
				slices.Reverse(chain)
				return chain
			}
			queue = append(queue, imp)
		}
	}
	return nil
}

// load lists the module's packages and all they depend on, as the build sees them (test
// files and build-tagged packages such as the end-to-end tests left out).
func load(t *testing.T) graph {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Imports", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, stderr.String())
	}
	g := graph{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		g[p.ImportPath] = p.Imports
	}
	return g
}

// TestLayering fails when a package of this module depends on one its rules forbid.
func TestLayering(t *testing.T) {
	g := load(t)
	for _, r := range rules {
		if len(r.sources(g)) == 0 {
			t.Errorf("rule %v -> %s matches no package: a renamed or removed package leaves it guarding nothing", r.from, r.forbid)
		}
	}
	for _, v := range check(g, rules) {
		t.Error(v)
	}
}

// TestCheckFindsViolations feeds the rules an import graph that breaks them, as the renderer's
// was before its types left the store: every break must be found, with a shortest chain.
func TestCheckFindsViolations(t *testing.T) {
	m := func(p string) string { return module + "/" + p }
	g := graph{
		m("internal/report"):           {"fmt", m("internal/export"), m("internal/engine")},
		m("internal/export"):           {m("internal/store"), m("internal/record")},
		m("internal/store"):            {"database/sql", "modernc.org/sqlite", m("internal/record")},
		m("internal/engine"):           {m("internal/agent")},
		m("internal/agent"):            {m("internal/record")},
		m("internal/record"):           {"time"},
		m("internal/cluster/datapath"): {"k8s.io/client-go/kubernetes"},
		"modernc.org/sqlite":           {"database/sql", "modernc.org/libc"},
		"fmt":                          nil, "time": nil, "database/sql": nil, "modernc.org/libc": nil,
		"k8s.io/client-go/kubernetes": nil,
	}
	var got []string
	for _, v := range check(g, rules) {
		got = append(got, v.String())
	}
	for _, want := range []string{
		"internal/report depends on internal/store (forbidden: " + why(t, "internal/store") + "): internal/report -> internal/export -> internal/store",
		"internal/report depends on modernc.org/sqlite (forbidden: " + why(t, "modernc.org/sqlite/...") + "): internal/report -> internal/export -> internal/store -> modernc.org/sqlite",
		"internal/report depends on internal/agent (forbidden: " + why(t, "internal/agent") + "): internal/report -> internal/engine -> internal/agent",
		"internal/export depends on modernc.org/sqlite (forbidden: " + why(t, "modernc.org/sqlite/...") + "): internal/export -> internal/store -> modernc.org/sqlite",
		"internal/engine depends on internal/agent (forbidden: " + rules[len(rules)-1].why + "): internal/engine -> internal/agent",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("missing violation:\n  %s\ngot:\n  %s", want, strings.Join(got, "\n  "))
		}
	}
	// The store's own driver, the agent's own imports and a cluster package reaching
	// client-go break no rule: none of them is a rule's source.
	for _, v := range got {
		if strings.HasPrefix(v, "internal/store ") || strings.HasPrefix(v, "internal/cluster") || strings.HasPrefix(v, "internal/agent ") {
			t.Errorf("violation outside the rules' sources: %s", v)
		}
	}
	clean := graph{m("internal/report"): {m("internal/record")}, m("internal/record"): {"time"}, "time": nil}
	if v := check(clean, rules); len(v) != 0 {
		t.Errorf("a graph that keeps the rules: %v", v)
	}
}

// why is the reason of the rendering rule that forbids pattern.
func why(t *testing.T, pattern string) string {
	t.Helper()
	for _, r := range rules {
		if r.forbid == pattern && slices.Equal(r.from, rendering) {
			return r.why
		}
	}
	t.Fatalf("no rendering rule forbids %s", pattern)
	return ""
}

func TestMatches(t *testing.T) {
	for _, c := range []struct {
		pattern, path string
		want          bool
	}{
		{"internal/cluster/...", module + "/internal/cluster", true},
		{"internal/cluster/...", module + "/internal/cluster/datapath", true},
		{"internal/cluster/...", module + "/internal/clusterx", false},
		{"internal/agent", module + "/internal/agentcmd", false},
		{"internal/agent", module + "/internal/agent", true},
		{"k8s.io/...", "k8s.io/client-go/kubernetes", true},
		{"k8s.io/...", "sigs.k8s.io/yaml", false},
		{"internal/...", "internal/abi", false}, // the standard library's internal packages
	} {
		if got := matches(c.pattern, c.path); got != c.want {
			t.Errorf("matches(%q, %q) = %v, want %v", c.pattern, c.path, got, c.want)
		}
	}
}
