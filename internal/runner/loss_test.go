package runner

import (
	"strings"
	"testing"
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
