package suite

import (
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/lab"
)

func TestFamiliesExpandTargetsOnOneCluster(t *testing.T) {
	s, err := Parse([]byte(`
paths: [cross-node, pod-to-service]
families: [ipv4, ipv6]
workloads: [{kind: tcp-rr, size: 64}, {kind: tcp-stream}]
`))
	if err != nil {
		t.Fatal(err)
	}
	e := s.Expand()
	if len(e.Targets) != 2 || e.Targets[0].Name != "local.ipv4" || e.Targets[1].Family != lab.IPv6 || len(e.Families) != 0 {
		t.Fatalf("expanded targets %+v", e.Targets)
	}
	// One cluster carries both: dual-stack, unless the suite said otherwise.
	for _, tg := range e.Targets {
		if tg.Local.IPFamily != lab.DualStack || tg.Local.Name != e.Targets[0].Local.Name {
			t.Errorf("target %s: cluster %s family %q, want one dual-stack cluster", tg.Name, tg.Local.Name, tg.Local.IPFamily)
		}
	}
	// sockperf takes IPv4 only: both families go through the agent, so one tool measures both.
	if got := e.Workloads[0].Tool; got != engine.NameCnibench {
		t.Errorf("tcp-rr's tool in a suite measuring IPv6 = %q, want %s", got, engine.NameCnibench)
	}
	if got := e.Workloads[1].Tool; got != "" {
		t.Errorf("tcp-stream's tool = %q, want iperf3's default (it carries IPv6)", got)
	}
	// The stored suite is the one written, its workloads untouched.
	if s.Workloads[0].Tool != "" || len(s.Families) != 2 || s.Targets[0].Local.IPFamily != "" {
		t.Errorf("Expand changed the suite as written: %+v", s)
	}
	// IPv6 alone is an IPv6-only cluster, or dual-stack on a datapath whose IPv6 needs IPv4.
	for dp, want := range map[string]string{"flannel-vxlan": lab.IPv6, "cilium-kpr": lab.DualStack} {
		only, err := Parse([]byte("targets: [{name: a, local: {datapath: " + dp + "}}]\nfamilies: [ipv6]\nworkloads: [{kind: tcp-stream}]"))
		if err != nil {
			t.Fatalf("%s: %v", dp, err)
		}
		if got := only.Expand().Targets[0].Local.IPFamily; got != want {
			t.Errorf("%s measuring IPv6 alone: a %q cluster, want %q", dp, got, want)
		}
	}
	// An IPv4-only suite keeps sockperf.
	v4, _ := Parse([]byte("families: [ipv4]\nworkloads: [{kind: tcp-rr, size: 64}]"))
	if tool := v4.Expand().Workloads[0].Tool; tool != "" {
		t.Errorf("tcp-rr's tool over IPv4 only = %q", tool)
	}
	// A local cluster that is IPv6-only measures IPv6 without a families list.
	v6, err := Parse([]byte("targets: [{name: a, local: {ipFamily: ipv6}}]\nworkloads: [{kind: tcp-rr, size: 64}]"))
	if err != nil || !v6.MeasuresIPv6() || v6.Expand().Workloads[0].Tool != engine.NameCnibench {
		t.Errorf("IPv6-only local cluster: %v, measures IPv6 %v", err, v6.MeasuresIPv6())
	}
}

func TestFamiliesValidation(t *testing.T) {
	for yaml, want := range map[string]string{
		`families: [ipv4, ipv4]`: "families[1]: ipv4 is listed twice",
		`families: [inet6]`:      `families[0]: "inet6": expected ipv4 or ipv6`,
		"families: [ipv6]\npaths: [gateway]\nworkloads: [{kind: gateway-split}]":                                                  "paths[0]: gateway: the Gateway API split is measured over IPv4 only",
		"families: [ipv6]\nworkloads: [{kind: tcp-rr, size: 64, tool: sockperf}]":                                                 "workloads[0].tool: sockperf cannot carry IPv6; expected tool: cnibench",
		"targets: [{name: a, local: {ipFamily: ipv4}, families: [ipv4, ipv6]}]":                                                   "targets[0].families: target a's local cluster is ipv4 (local.ipFamily): expected ipv6 or dual there",
		"targets: [{name: a, local: {datapath: cilium-kpr, ipFamily: ipv6}}]":                                                     `ipFamily: "ipv6": datapath cilium-kpr needs IPv4 beside IPv6`,
		"tunings: [default, veth-gro]\npods: round\nworkloads: [{kind: tcp-stream}]":                                              "pods: round: a tuning's offloads are set on pods deployed once",
		"families: [ipv4, ipv6]\nruntimes: [runc, crun, runsc]\npaths: [same-node]\npairs: [25]\nworkloads: [{kind: tcp-stream}]": "6 runtime, tuning and family variants put 300 pods",
	} {
		_, err := Parse([]byte(yaml))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", yaml, err, want)
		}
	}
	// The egress paths carry both families.
	if _, err := Parse([]byte("families: [ipv4, ipv6]\npaths: [egress, egress-gateway]\nworkloads: [{kind: tcp-stream}]")); err != nil {
		t.Errorf("the egress paths over both families: %v", err)
	}
	// A remote cluster's families are checked against its Nodes when the run starts.
	if _, err := Parse([]byte("targets: [{name: r, kubeconfig: /k}]\nfamilies: [ipv6]\nworkloads: [{kind: tcp-stream}]")); err != nil {
		t.Errorf("ipv6 on a remote target: %v", err)
	}
	o, err := Resolve("", Overrides{Families: []string{"ipv6", "v4"}})
	if err == nil || !strings.Contains(err.Error(), `families[1]: "v4"`) {
		t.Errorf("--families with an unknown family: %v, %+v", err, o)
	}
}
