package suite

import (
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/engine"
)

func TestRuntimesExpandTargetsOnOneCluster(t *testing.T) {
	s, err := Parse([]byte(`
paths: [same-node, cross-node]
runtimes: [runc, runsc]
pairs: [1, 2]
workloads: [{kind: tcp-rr, size: 64, tool: cnibench}, {kind: cpu, threads: 1}]
`))
	if err != nil {
		t.Fatal(err)
	}
	e := s.Expand()
	if len(e.Targets) != 2 || e.Targets[0].Name != "local.runc" || e.Targets[1].Runtime != "runsc" ||
		e.Targets[0].Local.Name != e.Targets[1].Local.Name || len(e.Runtimes) != 0 {
		t.Fatalf("expanded targets %+v", e.Targets)
	}
	// The stored suite is the one written: expanding it again gives the same targets.
	back, err := Parse([]byte(s.YAML()))
	if err != nil || len(back.Expand().Targets) != 2 {
		t.Fatalf("re-parsed suite: %v, %+v", err, back.Expand().Targets)
	}
	// tcp-rr: 2 paths x 2 pairs; cpu: one in-pod cell per pairs level; per target.
	m := e.Matrix()
	inPod := 0
	for _, c := range m {
		if c.Path == InPod {
			inPod++
			if !engine.InPod(c.Workload.Kind) {
				t.Errorf("%+v runs in a pod", c)
			}
		}
	}
	if len(m) != 2*(4+2) || inPod != 4 {
		t.Errorf("%d cells, %d in a pod; want 12 and 4", len(m), inPod)
	}
}

func TestRuntimesValidation(t *testing.T) {
	for yaml, want := range map[string]string{
		`runtimes: [runc, runc]`: "runtimes[1]: runc is listed twice",
		`runtimes: [kata]`:       `runtimes[0]: "kata": a local cluster with CRI containerd offers runc, crun, runsc, youki`,
		`runtimes: [Bad_Name]`:   `runtimes[0]: "Bad_Name": expected a RuntimeClass name`,
		"runtimes: [runc, runsc]\nworkloads: [{kind: tcp-rr, size: 64}]": "workloads[0].tool: sockperf's server fails under gVisor",
		"workloads: [{kind: cpu, threads: 999}]":                         "threads: expected 0 (one per CPU) to 256, got 999",
		"runtimes: [runc, crun, runsc]\npaths: [same-node]\npairs: [50]": "and 3 runtime, tuning and family variants put 300 pods on a local node",
	} {
		_, err := Parse([]byte(yaml))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", yaml, err, want)
		}
	}
	// A remote cluster's RuntimeClasses are its own.
	if _, err := Parse([]byte("targets: [{name: r, kubeconfig: /k}]\nruntimes: [kata]")); err != nil {
		t.Errorf("kata on a remote target: %v", err)
	}
	o, err := Resolve("", Overrides{Runtimes: []string{"runsc", "nope"}})
	if err == nil || !strings.Contains(err.Error(), `runtimes[1]: "nope"`) {
		t.Errorf("--runtimes with an unknown handler: %v, %+v", err, o)
	}
}

func TestCRIVariants(t *testing.T) {
	s, err := Resolve("", Overrides{CRIs: []string{"containerd", "crio"}, Runtimes: []string{"runc"}})
	if err != nil {
		t.Fatal(err)
	}
	e := s.Expand()
	if len(e.Targets) != 2 || e.Targets[0].Name != "local.containerd.runc" || e.Targets[1].Name != "local.crio.runc" ||
		e.Targets[0].Local.Name != "default-ctd" || e.Targets[1].Local.Name != "defaul-crio" || e.Targets[1].Local.CRI != "crio" {
		t.Errorf("targets %+v / %+v", e.Targets[0], e.Targets[1])
	}
	// CRI-O offers runc only; the error names the target's own list.
	_, err = Parse([]byte(`
targets:
  - {name: c, local: {cluster: a}, runtimes: [runc, runsc]}
  - {name: o, local: {cluster: b, cri: crio}, runtimes: [crun]}
workloads: [{kind: cpu}]
`))
	if err == nil || !strings.Contains(err.Error(), `targets[1].runtimes[0]: "crun": a local cluster with CRI crio offers runc`) {
		t.Errorf("crun on CRI-O: %v", err)
	}
	if _, err := Resolve("", Overrides{CRIs: []string{"docker"}}); err == nil || !strings.Contains(err.Error(), `cri: "docker": expected one of containerd, crio`) {
		t.Errorf("--cri docker: %v", err)
	}
}
