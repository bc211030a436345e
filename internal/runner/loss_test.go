package runner

import (
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/kube"
)

func TestLossesNameWhatEachTargetLost(t *testing.T) {
	r := &run{targets: []*target{
		{name: "a"},
		{name: "b", lost: Loss{Down: []string{"node1-containerd, node2-kubelet not running"}}},
		{name: "c", lost: Loss{Down: []string{"the API server at https://c:6443 (connection refused)", "node n1 (not Ready)"}, ControlPlane: true}},
	}}
	err := r.losses()
	if err == nil {
		t.Fatal("no error for a run whose targets lost components")
	}
	want := []string{"target b lost node1-containerd, node2-kubelet not running", "target c lost the API server at https://c:6443 (connection refused); node n1 (not Ready)"}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q does not say %q", err, w)
		}
	}
	if strings.Contains(err.Error(), "target a") {
		t.Errorf("%q blames a target that lost nothing", err)
	}
	if (&run{targets: []*target{{name: "a"}}}).losses() != nil {
		t.Error("an error for a run that lost nothing")
	}
	if got := r.targets[1].lost.explain("exec: EOF"); got != "lost node1-containerd, node2-kubelet not running: exec: EOF" {
		t.Errorf("explain: %q", got)
	}
}

// TestBrokenConnectionsOncePerCluster checks the run's account of its broken API connections:
// a line per cluster whose client noted one (targets of one cluster share its client), with
// the count and the last way it broke; nothing for a cluster whose connection held.
func TestBrokenConnectionsOncePerCluster(t *testing.T) {
	shared, other, quiet := &kube.Client{Server: "https://a:6443"}, &kube.Client{Server: "https://b:6443"}, &kube.Client{Server: "https://c:6443"}
	r := &run{targets: []*target{{name: "a.runc", client: shared}, {name: "a.crun", client: shared}, {name: "b", client: other}, {name: "c", client: quiet}, {name: "none"}}}
	shared.NoteLostConnection("an exec in p/c ended without output or exit status")
	shared.NoteLostConnection("an exec in q/c had not ended 30s after it began")
	other.NoteLostConnection("the server did not answer GET /api in 6s")
	got := r.brokenConnections()
	want := []string{
		"the connection to the API server at https://a:6443 broke 2 times during the run (the last: an exec in q/c had not ended 30s after it began)",
		"the connection to the API server at https://b:6443 broke once during the run (the server did not answer GET /api in 6s)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("broken connections:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
