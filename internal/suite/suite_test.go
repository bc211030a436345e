package suite

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/setting"
)

func TestParseFillsDefaultsAndRoundTrips(t *testing.T) {
	s, err := Parse([]byte("paths: [cross-node]\nrepetitions: 3\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Targets) != 1 || s.Targets[0].Local == nil || s.Targets[0].Local.Datapath != "bridge" || s.Targets[0].Local.Nodes != 2 {
		t.Errorf("default target not filled: %+v", s.Targets)
	}
	if len(s.Workloads) != 5 || s.Duration.Duration != 4*time.Second || s.Repetitions != 3 {
		t.Errorf("defaults: %d workloads, duration %s, repetitions %d", len(s.Workloads), s.Duration, s.Repetitions)
	}
	again, err := Parse([]byte(s.YAML()))
	if err != nil {
		t.Fatalf("the stored YAML does not parse back: %v\n%s", err, s.YAML())
	}
	if again.YAML() != s.YAML() {
		t.Errorf("YAML round trip changed the suite:\n%s\n---\n%s", s.YAML(), again.YAML())
	}
}

func TestParseNamesTheBadField(t *testing.T) {
	cases := map[string]string{
		"bogus: 1\n":          `unknown field "bogus"`,
		"paths: [sideways]\n": `paths[0]: "sideways" is not a path`,
		"repetitions: 1\n":    "repetitions: expected 2-1000",
		"duration: 1500ms\n":  "duration: expected whole seconds",
		"duration: soon\n":    "expected a duration such as 5s",
		"workloads: [{kind: tcp-stream, streams: 500}]":                           "workloads[0]: streams",
		"workloads: [{kind: udp-stream, size: 1300}]":                             "workloads[0]: rate",
		"workloads: [{kind: ping}]":                                               "workloads[0]",
		"targets: [{name: a, kubeconfig: k, local: {}}]":                          "targets[0]: expected either local or kubeconfig",
		"targets: [{name: a}, {name: a}]":                                         `targets[1].name: "a" is used twice`,
		"workloads: [{kind: tcp-rr, size: 64}, {kind: tcp-rr, size: 64}]":         "workloads[1]: tcp-rr/64B is listed twice",
		"targets: [{name: a, local: {kubernetes: v1.20.0}}]":                      `targets[0].local.kubernetes: "v1.20.0": expected one of v1.37.2`,
		"targets: [{name: a, local: {nodes: 51}}]":                                "targets[0].local.nodes: 51: expected a whole number from 1 to 50",
		"targets: [{name: a, local: {nodes: 1}}]\npaths: [same-node, cross-node]": "targets[0].local.nodes: 1 node cannot carry paths cross-node (they need two nodes)",
		"targets: [{name: a, local: {nodes: -1}}]":                                "targets[0].local.nodes: -1: expected a whole number from 1 to 50",
		"targets: [{name: a, local: {proxyMode: ipvs}}]":                          `targets[0].local.proxyMode: "ipvs": expected nftables or iptables for datapath bridge`,
		"targets: [{name: a, local: {cluster: Lab_1}}]":                           `targets[0].local.cluster: "Lab_1": expected 1-11 characters`,
		"pods: sometimes\n":                                                       `pods: "sometimes": expected run (deployed once for the run) or round`,
	}
	for in, want := range cases {
		_, err := Parse([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want it to contain %q", in, err, want)
		}
	}
}

// A single-node local cluster is refused only for paths that need a second node.
func TestOneNodeTargetForOneNodePaths(t *testing.T) {
	s, err := Parse([]byte("targets: [{name: a, local: {nodes: 1}}]\npaths: [same-node, localhost]\n"))
	if err != nil || s.Targets[0].Local.Nodes != 1 || len(s.TwoNodePaths()) != 0 {
		t.Fatalf("one node, one-node paths: %+v, %v", s, err)
	}
	if got := (Suite{Paths: AllPaths()}).TwoNodePaths(); len(got) != len(AllPaths())-3 || slices.Contains(got, SameNode) || slices.Contains(got, Localhost) || slices.Contains(got, SecondarySameNode) {
		t.Errorf("two-node paths of every path: %v", got)
	}
}

func TestResolveOverrides(t *testing.T) {
	s, err := Resolve("", Overrides{Context: "prod", Paths: []string{CrossNode}, Repetitions: 7, Duration: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Targets) != 1 || s.Targets[0].Name != "prod" || s.Targets[0].Local != nil {
		t.Errorf("--context should replace the local target: %+v", s.Targets)
	}
	if len(s.Paths) != 1 || s.Repetitions != 7 || s.Duration.Duration != 2*time.Second {
		t.Errorf("overrides not applied: %+v", s)
	}
	var invalid *InvalidError
	if _, err := Resolve("", Overrides{Repetitions: 1}); !errors.As(err, &invalid) || !strings.Contains(err.Error(), "repetitions: expected 2-1000") {
		t.Errorf("a bad flag should be refused as the suite field it sets (the command line names the flag too): %v", err)
	}
	l, err := Resolve("", Overrides{Datapath: "bridge", ProxyMode: "iptables", LocalCluster: "lab"})
	if err != nil || l.Targets[0].Local.ProxyMode != "iptables" || l.Targets[0].Local.Name != "lab" {
		t.Errorf("local overrides: %+v, %v", l.Targets[0].Local, err)
	}
	if l.Targets[0].Local.Kubernetes != "v1.37.2" {
		t.Errorf("default Kubernetes release = %q, want v1.37.2", l.Targets[0].Local.Kubernetes)
	}
	k, err := Resolve("", Overrides{Datapaths: []string{"bridge", "flannel-vxlan"}, Kubernetes: "v1.34.2"})
	if err != nil || k.Targets[0].Local.Kubernetes != "v1.34.2" || k.Targets[1].Local.Kubernetes != "v1.34.2" {
		t.Errorf("--kubernetes-version with --datapaths: %+v, %v", k.Targets, err)
	}
}

func TestMatrixCoversEveryCell(t *testing.T) {
	s := Default()
	s.Targets = append(s.Targets, Target{Name: "b", Kubeconfig: "k"})
	if got, want := len(s.Matrix()), 2*len(s.Paths)*len(s.Workloads); got != want {
		t.Errorf("%d cells, want %d", got, want)
	}
}

func TestPairsDimension(t *testing.T) {
	s, err := Parse([]byte("paths: [same-node, cross-node]\nworkloads: [{kind: tcp-rr, size: 64}]\npairs: [1, 10, 40]\n"))
	if err != nil {
		t.Fatal(err)
	}
	cells := s.Matrix()
	if len(cells) != 6 || s.MostPairs() != 40 {
		t.Fatalf("%d cells, most pairs %d: %+v", len(cells), s.MostPairs(), cells)
	}
	seen := map[int]int{}
	for _, c := range cells {
		seen[c.Pairs]++
	}
	if seen[1] != 2 || seen[10] != 2 || seen[40] != 2 {
		t.Errorf("every path has every level once: %v", seen)
	}
	if d := Default(); len(d.Matrix()) != 20 {
		t.Errorf("the default suite has %d cells, want 20 (4 paths x 5 workloads, one pair)", len(d.Matrix()))
	}
	for yaml, want := range map[string]string{
		"pairs: [0]":    "pairs[0]: expected 1-120",
		"pairs: [5, 5]": "pairs[1]: 5 is listed twice",
		"pairs: [121]":  "pairs[0]: expected 1-120",
		"pairs: [100]\npaths: [same-node, localhost]": "put 300 pods on a local node",
	} {
		if _, err := Parse([]byte(yaml)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want %q", yaml, err, want)
		}
	}
	if _, err := ParsePairs("1,x"); err == nil || !strings.Contains(err.Error(), `pairs: "x": expected`) {
		t.Errorf("ParsePairs: %v", err)
	}
	o, err := Resolve("", Overrides{Pairs: []int{2, 4}})
	if err != nil || o.MostPairs() != 4 {
		t.Errorf("--pairs override: %v %v", o.Pairs, err)
	}
}

// Every shipped study loads: a suite in examples/ that fails validation is a broken promise.
func TestExamplesLoad(t *testing.T) {
	files, err := filepath.Glob("../../examples/*.yaml")
	if err != nil || len(files) < 2 {
		t.Fatalf("examples: %v, %v", files, err)
	}
	for _, f := range files {
		if _, err := Load(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestPrecisionAndBudget(t *testing.T) {
	s, err := Parse([]byte("repetitions: 4\n"))
	if err != nil || s.Precision != 0 || s.Repetitions != 4 {
		t.Fatalf("a suite file without precision: %v, %v", s.Precision, err)
	}
	if y := s.YAML(); strings.Contains(y, "budget") || strings.Contains(y, "precision") {
		t.Errorf("a suite without precision writes it:\n%s", y)
	}
	if d := Default(); d.Precision != 0.05 || d.Budget.Duration != DefaultBudget || d.Repetitions != 3 {
		t.Errorf("the default suite: precision %v, budget %s, %d rounds", d.Precision, d.Budget, d.Repetitions)
	}
	if f, err := Parse([]byte("paths: [cross-node]\n")); err != nil || f.Repetitions != fileRepetitions || f.Precision != 0 {
		t.Errorf("a file naming no rounds: %d rounds, precision %v, %v", f.Repetitions, f.Precision, err)
	}
	off, err := Resolve("", Overrides{Precision: -1})
	if err != nil || off.Precision != 0 || off.Budget.Duration != 0 {
		t.Errorf("--precision off: %v, budget %s, %v", off.Precision, off.Budget, err)
	}
	p, err := Parse([]byte("precision: 5%\n"))
	if err != nil || p.Precision != 0.05 || p.Budget.Duration != DefaultBudget {
		t.Fatalf("precision 5%%: %v, budget %s, %v", p.Precision, p.Budget, err)
	}
	back, err := Parse([]byte(p.YAML()))
	if err != nil || back.Precision != 0.05 || back.Budget != p.Budget {
		t.Errorf("round trip: %v %s, %v\n%s", back.Precision, back.Budget, err, p.YAML())
	}
	for in, want := range map[string]string{
		"precision: 0.05\nbudget: 3m\n": "",
		"precision: 150%\n":             "precision: expected a percentage above 0% and below 100%",
		"precision: lots\n":             "expected a percentage such as 5%",
		"budget: 3m\n":                  "budget: expected a positive duration, and only with precision",
	} {
		_, err := Parse([]byte(in))
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}

func TestGatewaySplitExpandsVUsAndRunsOnTheGatewayOnly(t *testing.T) {
	s, err := Parse([]byte(`
targets: [{name: l, local: {datapath: bridge}}]
paths: [cross-node, gateway]
workloads:
  - {kind: tcp-stream, streams: 1}
  - {kind: gateway-split, weight: 40, vus: [1, 10, 100]}
repetitions: 2
duration: 5s
`))
	if err != nil {
		t.Fatal(err)
	}
	cells := map[string]bool{}
	for _, c := range s.Matrix() {
		cells[c.Path+" "+c.Workload.Engine(time.Second).ID()] = true
	}
	want := []string{"cross-node tcp-stream/1", "gateway gateway-split/40%x1vu", "gateway gateway-split/40%x10vu", "gateway gateway-split/40%x100vu"}
	if len(cells) != len(want) {
		t.Errorf("cells %v, want %v", cells, want)
	}
	for _, w := range want {
		if !cells[w] {
			t.Errorf("no cell %q in %v", w, cells)
		}
	}
}

func TestGatewaySplitValidation(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"paths: [gateway]\nworkloads: [{kind: tcp-rr, size: 1}]\nduration: 5s", "paths: gateway carries only gateway-split workloads"},
		{"paths: [cross-node]\nworkloads: [{kind: gateway-split, weight: 40, vus: [1]}]\nduration: 5s", "workloads[0]: gateway-split runs on path gateway only"},
		{"paths: [gateway]\nworkloads: [{kind: gateway-split, weight: 40, vus: [1]}]\nduration: 2s", "duration: gateway-split judges its split per 5-second window"},
		{"paths: [gateway]\nworkloads: [{kind: gateway-split, weight: 0, vus: [1]}]\nduration: 5s", "weight: expected 1-99"},
	} {
		_, err := Parse([]byte("targets: [{name: l, local: {datapath: bridge}}]\nrepetitions: 2\n" + c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.yaml, err, c.want)
		}
	}
}

func TestExternalTargetValidation(t *testing.T) {
	_, err := Parse([]byte(`
targets: [{name: r, kubeconfig: /k, external: {address: "lab-host"}}]
paths: [egress]
workloads: [{kind: tcp-rr, size: 1}]
repetitions: 2
`))
	if err == nil || !strings.Contains(err.Error(), "targets[0].external.address: expected HOST:PORT") {
		t.Errorf("external without a port: %v", err)
	}
	_, err = Parse([]byte(`
targets: [{name: r, kubeconfig: /k, external: {address: "lab-host:25199"}}]
paths: [egress]
workloads: [{kind: tcp-rr, size: 1}]
repetitions: 2
`))
	if err == nil || !strings.Contains(err.Error(), "targets[0].external.tokenFile: expected the file holding the token") {
		t.Errorf("external without its token: %v", err)
	}
	if _, err = Parse([]byte(`
targets: [{name: r, kubeconfig: /k, external: {address: "lab-host:25199", tokenFile: /etc/cnibench/token}}]
paths: [egress]
workloads: [{kind: tcp-rr, size: 1}]
repetitions: 2
`)); err != nil {
		t.Errorf("external with its token: %v", err)
	}
	_, err = Parse([]byte(`
targets: [{name: l, local: {datapath: bridge}, external: {address: "h:25199"}}]
repetitions: 2
`))
	if err == nil || !strings.Contains(err.Error(), "targets[0].external: a local cluster has its own external host") {
		t.Errorf("external on a local target: %v", err)
	}
}

// A remote target names the NetworkAttachmentDefinition of its secondary paths as a pod's
// annotation would; a local one offers its own; --secondary-network sets it on remote targets.
func TestSecondaryNetworkIsForRemoteTargets(t *testing.T) {
	for _, c := range []struct{ target, want string }{
		{`{name: r, kubeconfig: /k, secondaryNetwork: bench/macvlan-1}`, ""},
		{`{name: r, kubeconfig: /k, secondaryNetwork: macvlan.v1}`, ""},
		{`{name: r, kubeconfig: /k, secondaryNetwork: "Bench/mv"}`, `targets[0].secondaryNetwork: "Bench/mv": expected a NetworkAttachmentDefinition as NAMESPACE/NAME, or NAME`},
		{`{name: r, kubeconfig: /k, secondaryNetwork: "a/b/c"}`, `targets[0].secondaryNetwork: "a/b/c": expected`},
		{`{name: r, kubeconfig: /k, secondaryNetwork: "a.b/c"}`, `targets[0].secondaryNetwork: "a.b/c": expected`},
		{`{name: l, local: {datapath: flannel-vxlan, multus: true}, secondaryNetwork: default/mv}`,
			"targets[0].secondaryNetwork: a local cluster offers its own secondary network (local.multus: true)"},
	} {
		_, err := Parse([]byte("targets: [" + c.target + "]\npaths: [secondary, secondary-same-node]\nrepetitions: 2\n"))
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v, want %q", c.target, err, c.want)
		}
	}
	s, err := Resolve("", Overrides{Kubeconfig: "/k", SecondaryNetwork: "bench/mv"})
	if err != nil || s.Targets[0].SecondaryNetwork != "bench/mv" {
		t.Errorf("--secondary-network on a remote target: %v, %+v", err, s.Targets)
	}
	if s, err = Resolve("", Overrides{SecondaryNetwork: "bench/mv"}); err != nil || s.Targets[0].SecondaryNetwork != "" {
		t.Errorf("--secondary-network on the local target: %v, %+v", err, s.Targets)
	}
}

// A remote target may name the image its nodes pull; a local one runs the image it built.
func TestTargetImageIsForRemoteTargets(t *testing.T) {
	s, err := Parse([]byte(`
targets: [{name: r, kubeconfig: /k, image: "reg.example:5000/tools@sha256:ab"}]
repetitions: 2
`))
	if err != nil || s.Targets[0].Image != "reg.example:5000/tools@sha256:ab" {
		t.Errorf("image on a remote target: %v, %+v", err, s.Targets)
	}
	_, err = Parse([]byte(`
targets: [{name: l, local: {datapath: bridge}, image: x}]
repetitions: 2
`))
	if err == nil || !strings.Contains(err.Error(), "targets[0].image: a local cluster runs the tools image it built") {
		t.Errorf("image on a local target: %v", err)
	}
}

// A misspelt field is named by its line, its path in the suite and the nearest known name,
// wherever it sits; a key far from every name gets no guess.
func TestParseExplainsUnknownFields(t *testing.T) {
	cases := map[string][]string{
		"targets: [{local: {datapth: bridge}}]\n":                                             {"line 1", "targets[0].local.datapth", `unknown field "datapth"`, "did you mean datapath?"},
		"paths: [cross-node]\nworkloads:\n  - {kind: tcp-rr}\n  - {kind: tcp-rr, szie: 64}\n": {"line 4", "workloads[1].szie", "did you mean size?"},
		"repetitons: 3\n": {"line 1", "repetitons", "did you mean repetitions?"},
		"targets:\n  - name: a\n    networkPolicy: {allwo: true}\n": {"line 3", "targets[0].networkPolicy.allwo", "did you mean allow?"},
		"zzzzzzzz: 1\n": {"line 1", `unknown field "zzzzzzzz"`, "known here: apiVersion, budget"},
	}
	for in, wants := range cases {
		_, err := Parse([]byte(in))
		for _, want := range wants {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%q: error %v, want it to contain %q", in, err, want)
			}
		}
	}
	if _, err := Parse([]byte("zzzzzzzz: 1\n")); err != nil && strings.Contains(err.Error(), "did you mean") {
		t.Errorf("a key far from every name got a guess: %v", err)
	}
}

// precision: off means no precision target in a file, as --precision off does on the command
// line, whether YAML reads it as a string or (unquoted, YAML 1.1) as false.
func TestParsePrecisionOff(t *testing.T) {
	for _, in := range []string{"precision: off\n", "precision: \"off\"\n", "precision: false\n"} {
		s, err := Parse([]byte(in))
		if err != nil || s.Precision != 0 {
			t.Errorf("%q: precision %v, %v", in, s.Precision, err)
		}
	}
	if _, err := Parse([]byte("precision: sometimes\n")); err == nil || !strings.Contains(err.Error(), "expected a percentage") {
		t.Errorf("precision: sometimes: %v", err)
	}
}

// warmup: off drops the warm-up round, in whichever form YAML gives it, and survives the
// round trip through the JSON stored with a run; a duration still reads as one.
func TestParseWarmupOff(t *testing.T) {
	for _, in := range []string{"warmup: off\n", "warmup: \"off\"\n", "warmup: false\n"} {
		s, err := Parse([]byte(in))
		if err != nil || !s.Warmup.Off {
			t.Errorf("%q: warmup %+v, %v", in, s.Warmup, err)
			continue
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var back Suite
		if err := json.Unmarshal(b, &back); err != nil || !back.Warmup.Off {
			t.Errorf("%q: after a JSON round trip, warmup %+v, %v", in, back.Warmup, err)
		}
	}
	if s, err := Parse([]byte("warmup: 3s\n")); err != nil || s.Warmup.Off || s.Warmup.Duration != 3*time.Second {
		t.Errorf("warmup: 3s: %+v, %v", s.Warmup, err)
	}
	for in, want := range map[string]string{"warmup: never\n": "expected a duration such as 2s, or off", "warmup: 500ms\n": "warmup: expected whole seconds, at least 1s, or off"} {
		if _, err := Parse([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
	o := Overrides{NoWarmup: true}
	if s, err := Resolve("", o); err != nil || !s.Warmup.Off {
		t.Errorf("--warmup off: %+v, %v", s.Warmup, err)
	}
}

// Every figure of a study must name a cell and metric of the suite.
func TestReferenceFiguresNameTheSuitesCells(t *testing.T) {
	base := `
targets: [{name: a, local: {cluster: a}}, {name: b, local: {cluster: b, datapath: flannel-vxlan}}]
paths: [cross-node]
workloads: [{kind: tcp-stream, streams: 1}]
`
	ok := base + `reference: {study: "a study", figures: [{target: a, path: cross-node, workload: tcp-stream/1, metric: throughput_gbps, value: 1.5},
  {target: b, against: a, path: cross-node, workload: tcp-stream/1, metric: throughput_gbps, value: 1.416}]}
`
	if _, err := Parse([]byte(ok)); err != nil {
		t.Fatalf("a valid study: %v", err)
	}
	for bad, want := range map[string]string{
		`reference: {study: s, figures: [{target: c, path: cross-node, workload: tcp-stream/1, metric: throughput_gbps, value: 1}]}`:             "reference.figures[0].target: \"c\"",
		`reference: {study: s, figures: [{target: a, path: same-node, workload: tcp-stream/1, metric: throughput_gbps, value: 1}]}`:              "reference.figures[0].path: \"same-node\"",
		`reference: {study: s, figures: [{target: a, path: cross-node, workload: tcp-stream/4, metric: throughput_gbps, value: 1}]}`:             "reference.figures[0].workload: \"tcp-stream/4\"",
		`reference: {study: s, figures: [{target: a, path: cross-node, workload: tcp-stream/1, metric: speed, value: 1}]}`:                       "reference.figures[0].metric: \"speed\"",
		`reference: {study: s, figures: [{target: a, against: a, path: cross-node, workload: tcp-stream/1, metric: throughput_gbps, value: 1}]}`: "reference.figures[0].against",
		`reference: {figures: [{target: a, path: cross-node, workload: tcp-stream/1, metric: throughput_gbps, value: 1}]}`:                       "reference.study",
	} {
		if _, err := Parse([]byte(base + bad)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", bad, err, want)
		}
	}
}

// A suite measuring runtimes names their variants ("a.runc") as its samples do; a figure per
// pair must be of a metric the pairs sum, and a workload run inside one pod has the in-pod path.
func TestReferenceFiguresOfRuntimeVariants(t *testing.T) {
	base := `
targets: [{name: a, local: {cluster: a}, runtimes: [runc, crun]}]
paths: [cross-node]
workloads: [{kind: tcp-stream, streams: 1}, {kind: tcp-rr, size: 64}, {kind: stream, threads: 1, size: 8388608}]
pairs: [1, 10]
`
	ok := base + `reference: {study: s, figures: [{target: a.crun, against: a.runc, path: cross-node, workload: tcp-stream/1, metric: throughput_gbps, value: 0.9},
  {target: a.runc, path: cross-node, workload: tcp-stream/1, metric: throughput_gbps, pairs: 10, perPair: true, value: 2.3},
  {target: a.runc, path: in-pod, workload: stream/1x8M, metric: stream_copy_mbps, pairs: 10, value: 10940.5}]}
`
	if _, err := Parse([]byte(ok)); err != nil {
		t.Fatalf("figures of variants: %v", err)
	}
	for bad, want := range map[string]string{
		`reference: {study: s, figures: [{target: a, path: cross-node, workload: tcp-stream/1, metric: throughput_gbps, value: 1}]}`:                            `target: "a": expected one of the suite's targets [a.runc a.crun]`,
		`reference: {study: s, figures: [{target: a.runc, path: cross-node, workload: tcp-rr/64, metric: latency_p50_us, pairs: 10, perPair: true, value: 1}]}`: "reference.figures[0].perPair: latency_p50_us is not summed over pairs",
	} {
		if _, err := Parse([]byte(base + bad)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", bad, err, want)
		}
	}
}

// Flags that replace a study suite's targets or paths keep the figures that still have a cell.
func TestReferenceFollowsTheFlags(t *testing.T) {
	s, err := Resolve("../../examples/flannel-vs-cilium.yaml", Overrides{Datapaths: []string{"bridge", "cilium-vxlan"}})
	if err != nil || s.Reference != nil {
		t.Errorf("--datapaths replacing both targets: %v, reference %+v", err, s.Reference)
	}
	s, err = Resolve("../../examples/flannel-vs-cilium.yaml", Overrides{Paths: []string{CrossNode}})
	if err != nil || s.Reference == nil || len(s.Reference.Figures) != 6 {
		t.Fatalf("--paths cross-node: %v, reference %+v", err, s.Reference)
	}
	for _, f := range s.Reference.Figures {
		if f.Path != CrossNode {
			t.Errorf("figure of path %s kept", f.Path)
		}
	}
	if _, err := Parse([]byte("targets: [{name: a}]\nreference: {study: s, figures: [{target: b, path: cross-node, workload: tcp-stream/1, metric: throughput_gbps, value: 1}]}\n")); err == nil {
		t.Error("a suite file naming a target it does not have must still be refused")
	}
}

// The run command's string flags name their setting and what they expect when they are wrong
// (the command line names the flag).
func TestSettingFlags(t *testing.T) {
	var o Overrides
	if err := errors.Join(o.SetWarmup("off"), o.SetPrecision("3%"), o.SetMargin("1%")); err != nil || !o.NoWarmup || o.Precision != 0.03 || o.Margin != 0.01 {
		t.Errorf("good flags: %+v, %v", o, err)
	}
	if err := errors.Join(o.SetWarmup(""), o.SetPrecision(""), o.SetMargin("")); err != nil {
		t.Errorf("empty flags keep the suite's: %v", err)
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{o.SetWarmup("soon"), `warmup: "soon": expected a duration such as 2s, or off`},
		{o.SetWarmup("-1s"), `warmup: "-1s"`},
		{o.SetPrecision("100%"), `precision: "100%": expected a percentage above 0% and below 100%`},
		{o.SetMargin("off"), `margin: "off": expected a percentage above 0% and below 50%`},
		{o.SetMargin("60%"), `margin: "60%"`},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("error %v, want %q", c.err, c.want)
		}
	}
	// A margin without precision is a suite refused (the command line adds the flag's name).
	var invalid *InvalidError
	if _, err := Resolve("", Overrides{Precision: -1, Margin: 0.02}); !errors.As(err, &invalid) || !strings.HasPrefix(err.Error(), "margin:") {
		t.Errorf("--margin with --precision off: %v", err)
	}
}

// --faithful measures each workload for the study's own duration of its kind; a workload's
// duration and the study's durations are checked like the suite's.
func TestFaithfulDurations(t *testing.T) {
	base := `
targets: [{name: a, local: {cluster: a}}]
paths: [cross-node]
workloads: [{kind: tcp-stream, streams: 1}, {kind: tcp-rr, size: 64}, {kind: udp-stream, size: 1300, rate: 1G, duration: 3s}]
duration: 2s
`
	study := base + `reference: {study: "a study", durations: {tcp-stream: 120s, tcp-rr: 75s},
  figures: [{target: a, path: cross-node, workload: tcp-stream/1, metric: throughput_gbps, value: 1.5}]}
`
	file := filepath.Join(t.TempDir(), "study.yaml")
	if err := os.WriteFile(file, []byte(study), 0o644); err != nil {
		t.Fatal(err)
	}
	quick, err := Resolve(file, Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	faithful, err := Resolve(file, Overrides{Faithful: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct{ quick, faithful time.Duration }{
		{2 * time.Second, 120 * time.Second}, {2 * time.Second, 75 * time.Second}, {3 * time.Second, 3 * time.Second},
	} {
		if got := quick.Workloads[i].SampleDuration(quick); got != want.quick {
			t.Errorf("workload %d: %s without --faithful, want %s", i, got, want.quick)
		}
		if got := faithful.Workloads[i].SampleDuration(faithful); got != want.faithful {
			t.Errorf("workload %d: %s with --faithful, want %s", i, got, want.faithful)
		}
	}
	if _, err := Resolve("", Overrides{Faithful: true}); err == nil || !strings.Contains(err.Error(), "reference.durations") {
		t.Errorf("--faithful without study durations: %v", err)
	}
	for bad, want := range map[string]string{
		base + `reference: {study: s, durations: {tcp-crr: 75s}, figures: [{target: a, path: cross-node, workload: tcp-stream/1, metric: throughput_gbps, value: 1}]}`:   "reference.durations.tcp-crr: expected a workload kind",
		base + `reference: {study: s, durations: {tcp-rr: 1500ms}, figures: [{target: a, path: cross-node, workload: tcp-stream/1, metric: throughput_gbps, value: 1}]}`: "reference.durations.tcp-rr: expected whole seconds",
		strings.Replace(base, "duration: 3s", "duration: 500ms", 1): "workloads[2].duration: expected whole seconds",
	} {
		if _, err := Parse([]byte(bad)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s\n: %v, want %q", bad, err, want)
		}
	}
}

// A suite file may name its schema's version: absent and cnibench/v1 read alike and the suite
// carries v1, stored with the run; another version is refused by its field, naming the ones
// this build reads.
func TestAPIVersion(t *testing.T) {
	for _, in := range []string{"repetitions: 3\n", "apiVersion: cnibench/v1\nrepetitions: 3\n"} {
		s, err := Parse([]byte(in))
		if err != nil || s.APIVersion != APIVersion || !strings.HasPrefix(s.YAML(), "apiVersion: cnibench/v1\n") {
			t.Errorf("%q: %v, version %q, stored as:\n%s", in, err, s.APIVersion, s.YAML())
		}
	}
	if s, err := Resolve("", Overrides{}); err != nil || !strings.Contains(s.YAML(), "apiVersion: cnibench/v1") {
		t.Errorf("the default suite: %v\n%s", err, s.YAML())
	}
	// Another version is refused before its fields, which may be other than this schema's.
	_, err := Parse([]byte("apiVersion: cnibench/v2\nnewField: 1\n"))
	var invalid *InvalidError
	var se *setting.Error
	if !errors.As(err, &invalid) || !errors.As(err, &se) || se.Name != "apiVersion" ||
		err.Error() != `apiVersion: "cnibench/v2": expected cnibench/v1 (or none, which means cnibench/v1): this build reads no other version of the suite schema` {
		t.Errorf("an unknown version: %v", err)
	}
	s := Default()
	s.APIVersion = "v1"
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), `apiVersion: "v1": expected cnibench/v1`) {
		t.Errorf("a suite built with an unknown version: %v", err)
	}
}

// Every refused field is a setting error named by its path in the suite, a local block's
// settings placed under their target.
func TestValidateNamesFieldsBySettingErrors(t *testing.T) {
	s := Default()
	s.Repetitions, s.Paths = 1, []string{"nowhere"}
	s.Targets[0].Local.Nodes = 60
	var invalid *InvalidError
	if err := s.Validate(); !errors.As(err, &invalid) {
		t.Fatalf("got %v", err)
	}
	var names []string
	for _, e := range unjoin(invalid.Err) {
		var se *setting.Error
		if !errors.As(e, &se) {
			t.Errorf("not a setting error: %v", e)
			continue
		}
		names = append(names, se.Name)
	}
	for _, want := range []string{"targets[0].local.nodes", "paths[0]", "repetitions"} {
		if !slices.Contains(names, want) {
			t.Errorf("no error named %s in %v", want, names)
		}
	}
}

// --faithful measures with the study's own tools too: each workload of a kind the study ran
// with netperf becomes netperf's, and the study's figures follow the workloads' new IDs. A tool
// that cannot measure a workload of its kind is refused by its field.
func TestFaithfulTools(t *testing.T) {
	base := `
targets: [{name: a, local: {cluster: a}}]
paths: [cross-node]
workloads: [{kind: tcp-stream, streams: 1, size: 8192}, {kind: tcp-rr, size: 64, tool: cnibench}, {kind: udp-stream, size: 1300, rate: 1G}]
duration: 2s
`
	study := base + `reference: {study: "a study", durations: {tcp-stream: 120s, tcp-rr: 75s}, tools: {tcp-stream: netperf, tcp-rr: netperf},
  figures: [{target: a, path: cross-node, workload: tcp-stream/1x8K, metric: throughput_gbps, value: 1.5},
            {target: a, path: cross-node, workload: tcp-rr/64B+cnibench, metric: latency_mean_us, value: 359},
            {target: a, path: cross-node, workload: udp-stream/1300B@1G, metric: loss_pct, value: 1}]}
`
	file := filepath.Join(t.TempDir(), "study.yaml")
	if err := os.WriteFile(file, []byte(study), 0o644); err != nil {
		t.Fatal(err)
	}
	quick, err := Resolve(file, Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	faithful, err := Resolve(file, Overrides{Faithful: true})
	if err != nil {
		t.Fatal(err)
	}
	ids := func(s Suite) (ws, figs []string) {
		for _, w := range s.Workloads {
			ws = append(ws, w.Engine(time.Second).ID())
		}
		for _, f := range s.Reference.Figures {
			figs = append(figs, f.Workload)
		}
		return ws, figs
	}
	ws, figs := ids(quick)
	if want := []string{"tcp-stream/1x8K", "tcp-rr/64B+cnibench", "udp-stream/1300B@1G"}; !slices.Equal(ws, want) || !slices.Equal(figs, want) {
		t.Errorf("without --faithful: workloads %v, figures %v, want %v", ws, figs, want)
	}
	ws, figs = ids(faithful)
	if want := []string{"tcp-stream/1x8K+netperf", "tcp-rr/64B+netperf", "udp-stream/1300B@1G"}; !slices.Equal(ws, want) || !slices.Equal(figs, want) {
		t.Errorf("with --faithful: workloads %v, figures %v, want %v", ws, figs, want)
	}
	for bad, want := range map[string]string{
		strings.Replace(study, "tools: {tcp-stream: netperf, tcp-rr: netperf}", "tools: {udp-stream: netperf}", 1): `reference.tools.udp-stream: "netperf": netperf does not measure udp-stream/1300B@1G; it measures tcp-stream with 1 stream and tcp-rr`,
		strings.Replace(study, "tools: {tcp-stream: netperf, tcp-rr: netperf}", "tools: {tcp-crr: netperf}", 1):    "reference.tools.tcp-crr: expected a workload kind of the suite",
		strings.Replace(study, "tools: {tcp-stream: netperf, tcp-rr: netperf}", "tools: {tcp-rr: uperf}", 1):       `reference.tools.tcp-rr: "uperf": tool: expected one of`,
	} {
		if _, err := Parse([]byte(bad)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s\n: %v, want %q", bad, err, want)
		}
	}
}

// A workload's tool that cannot measure it is refused by its own field, with why and what the
// tool measures.
func TestWorkloadToolIsNamed(t *testing.T) {
	_, err := Parse([]byte(`
workloads: [{kind: tcp-rr, size: 1, tool: netperf}, {kind: udp-stream, size: 1300, rate: 500M, tool: netperf}]
repetitions: 2
`))
	want := `workloads[1].tool: "netperf": netperf does not measure udp-stream/1300B@500M (Debian's netperf 2.7.0 is built without --enable-intervals, so it cannot pace datagrams at udp-stream's offered rate; use iperf3); it measures tcp-stream with 1 stream and tcp-rr`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("udp-stream with netperf: %v\nwant %s", err, want)
	}
	if _, err := Parse([]byte("workloads: [{kind: tcp-stream, streams: 1, tool: netperf}, {kind: tcp-rr, size: 1, tool: netperf}]\nrepetitions: 2\n")); err != nil {
		t.Errorf("netperf's own workloads: %v", err)
	}
}
