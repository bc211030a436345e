package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/catalog"
	"github.com/cnibench/cnibench/internal/record"
)

// A run of a suite that carries its study shows the study's figures beside its own, in the
// terminal, in Markdown, in HTML and in JSON.
func TestStudyFiguresBesideTheRun(t *testing.T) {
	suiteYAML := `targets: [{name: flannel, local: {cluster: a, datapath: flannel-vxlan}}, {name: cilium, local: {cluster: b, datapath: cilium-vxlan}}]
paths: [cross-node]
workloads: [{kind: tcp-stream, streams: 1}]
reference:
  study: "Flannel vs Cilium: kubeadm 1.21, 2 vCPU VMs, iperf3 <3 runs>"
  figures:
    - {target: flannel, path: cross-node, workload: tcp-stream/1, metric: throughput_gbps, value: 1.48}
    - {target: cilium, path: cross-node, workload: tcp-stream/1, metric: throughput_gbps, value: 1.53}
`
	run := record.Run{ID: "r1", Status: "complete", Suite: suiteYAML}
	var samples []record.Sample
	for round := 1; round <= 4; round++ {
		for target, v := range map[string]float64{"flannel": 5, "cilium": 6} {
			samples = append(samples, record.Sample{RunID: "r1", Round: round, Target: target, Path: "cross-node", Workload: "tcp-stream/1",
				Metrics: map[string]float64{catalog.Throughput: v + float64(round)/100}})
		}
	}
	targets := []record.Target{{Name: "flannel", Fingerprint: map[string]string{"cni": "flannel", "node_a_cpus": "2", "pod_mtu": "1450"}}, {Name: "cilium"}}
	d := NewDocument(run, targets, samples)
	var brief bytes.Buffer
	if err := Brief(&brief, d); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"beside the study: Flannel vs Cilium", "this run: flannel: cni=flannel cpus=2 pod_mtu=1450",
		"flannel cross-node tcp-stream/1 throughput_gbps  1.48 Gbit/s  5.02 [", "agrees (significant)"} {
		if !strings.Contains(brief.String(), want) {
			t.Errorf("terminal: no %q in\n%s", want, brief.String())
		}
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, []Document{d}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "## Beside the study") || !strings.Contains(md.String(), "iperf3 &lt;3 runs&gt;") ||
		!strings.Contains(md.String(), "| cilium cross-node tcp-stream/1 throughput_gbps | 1.53 Gbit/s | 6.02 [") {
		t.Errorf("markdown:\n%s", md.String())
	}
	var html bytes.Buffer
	if err := WriteHTML(&html, []Document{d}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(html.String(), "<h2>Beside the study</h2>") || !strings.Contains(html.String(), "iperf3 &lt;3 runs&gt;") {
		t.Errorf("html has no study section")
	}
	var js bytes.Buffer
	if err := Write(&js, "json", d); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Reference struct {
			Rows []struct {
				Study, Ours float64
				Direction   string
			}
		}
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil || len(doc.Reference.Rows) != 2 || doc.Reference.Rows[0].Study != 1.48 || doc.Reference.Rows[1].Direction != "agrees" {
		t.Errorf("json reference %+v, %v", doc.Reference, err)
	}
}
