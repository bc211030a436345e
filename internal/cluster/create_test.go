package cluster

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/cluster/binaries"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/progress"
)

// TestBinaryPaths checks that a cluster finds its own Kubernetes release's binaries, for
// itself and for the datapaths' scripts, and every other cached binary in the bin dir.
func TestBinaryPaths(t *testing.T) {
	k8s, err := binaries.KubernetesComponent("v1.34.2")
	if err != nil {
		t.Fatal(err)
	}
	b := binPaths{cache: binaries.Cache{Dir: "/c"}, k8s: k8s}
	for name, want := range map[string]string{
		"kubectl":  "/c/bin/kubernetes-v1.34.2/kubectl",
		"kubelet":  "/c/bin/kubernetes-v1.34.2/kubelet",
		"flanneld": "/c/bin/flanneld",
		"ctr":      "/c/bin/ctr",
	} {
		if got := b.any(name); got != filepath.Clean(want) {
			t.Errorf("any(%s) = %s, want %s", name, got, want)
		}
	}
	if got := b.kube("kube-apiserver"); got != "/c/bin/kubernetes-v1.34.2/kube-apiserver" {
		t.Errorf("kube(kube-apiserver) = %s", got)
	}
	w := waits{total: 3 * time.Minute}
	if got := w.step(3, 10*time.Second); got != time.Minute {
		t.Errorf("step(3) at --wait 3m = %s, want 1m", got)
	}
	w.total = time.Second // a short --wait bounds the wait for nodes, not the steps before it
	if got := w.step(3, time.Minute); got != time.Minute {
		t.Errorf("step(3, 1m) at --wait 1s = %s, want the floor 1m", got)
	}
}

// TestTmpMount checks that a node runtime gets a private /tmp unless the cluster's binaries or
// state lie under the host's /tmp, which it would hide (a first-use test's bin dir does).
func TestTmpMount(t *testing.T) {
	for _, tc := range []struct {
		cache, root string
		private     bool
	}{
		{"/var/cache/cnibench", "/var/lib/cnibench", true},
		{"/tmp/TestX/001", "/var/lib/cnibench", false},
		{"/var/cache/cnibench", "/tmp/TestX/002", false},
		{"/tmpcache", "/var/lib/cnibench", true},
	} {
		e := nodeEnv{bins: binPaths{cache: binaries.Cache{Dir: tc.cache}}, layout: Layout{Root: tc.root}}
		e.spec.Name = "cnbt"
		if got := e.tmpMount() != ""; got != tc.private {
			t.Errorf("cache %s, state %s: private /tmp %v, want %v", tc.cache, tc.root, got, tc.private)
		}
	}
}

// TestCreateAnnouncesOnlyWantedSteps checks that a create neither runs nor announces a step
// the cluster did not ask for (a plain cluster has no registry, Multus or Gateway API), and
// announces and runs the rest in order.
func TestCreateAnnouncesOnlyWantedSteps(t *testing.T) {
	var out strings.Builder
	ac := &actionContext{spec: Spec{LocalConfig: lab.LocalConfig{Name: "t", Registry: true}}, log: progress.New(&out, time.Now())}
	var ran []string
	step := func(name string) func(context.Context, *actionContext) error {
		return func(context.Context, *actionContext) error { ran = append(ran, name); return nil }
	}
	for _, a := range createActions(gatewaySet{}) {
		a.Execute = step(a.Name)
		if err := runActions(context.Background(), ac, []action{a}); err != nil {
			t.Fatal(err)
		}
	}
	for _, unwanted := range []string{"Multus", "Gateway API", "Envoy Gateway"} {
		if strings.Contains(out.String(), unwanted) || strings.Contains(strings.Join(ran, "\n"), unwanted) {
			t.Errorf("a cluster without %s announced or ran its step:\n%s", unwanted, out.String())
		}
	}
	for _, wanted := range []string{"starting nodes", "starting the lab registry", "starting the external host"} {
		if !strings.Contains(out.String(), wanted) || !slices.ContainsFunc(ran, func(r string) bool { return strings.HasPrefix(r, wanted) }) {
			t.Errorf("step %q neither announced nor run:\n%s", wanted, out.String())
		}
	}
}
