package suite

import (
	"strings"
	"testing"
)

// TestTuningsExpandTargetsOnOneCluster checks that runtimes and tunings multiply into targets
// of one cluster, named by both, each with its own profile.
func TestTuningsExpandTargetsOnOneCluster(t *testing.T) {
	s, err := Parse([]byte(`
paths: [cross-node]
runtimes: [runc, crun]
tunings: [default, throughput]
workloads: [{kind: tcp-stream}]
`))
	if err != nil {
		t.Fatal(err)
	}
	e := s.Expand()
	var names []string
	for _, tg := range e.Targets {
		names = append(names, tg.Name+"="+tg.Runtime+"/"+tg.Tuning)
		if tg.Local.Name != e.Targets[0].Local.Name {
			t.Errorf("%s on cluster %s, want %s", tg.Name, tg.Local.Name, e.Targets[0].Local.Name)
		}
	}
	want := "local.runc.default=runc/default local.runc.throughput=runc/throughput local.crun.default=crun/default local.crun.throughput=crun/throughput"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("expanded targets %s, want %s", got, want)
	}
}

// TestTuningsErrors checks that each misuse of tunings gets one error naming its field.
func TestTuningsErrors(t *testing.T) {
	for body, want := range map[string]string{
		"paths: [cross-node]\ntunings: [jumbo]":                       "tunings[0]: tuning \"jumbo\": expected a profile file (a path) or one of default, throughput, latency",
		"paths: [cross-node]\ntunings: [latency, latency]":            "tunings[1]: profile latency is listed twice",
		"paths: [host-network, cross-node]\ntunings: [throughput]":    "paths[0]: host-network: its pods share their node's network namespace",
		"paths: [cross-node]\ntunings: [/nonexistent/p.yaml]":         "tunings[0]: tuning /nonexistent/p.yaml: open",
		"targets: [{name: r, kubeconfig: /k}]\ntunings: [throughput]": "tunings: target r is a remote cluster: tuning profiles apply to local clusters",
	} {
		_, err := Parse([]byte(body + "\nworkloads: [{kind: tcp-stream}]"))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want an error containing %q", body, err, want)
		}
	}
}
