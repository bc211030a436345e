package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/analysis"
	"github.com/cnibench/cnibench/internal/record"
)

// TestTableIntervalsInsideTheDomain: a latency cell of two distant samples has a t-interval
// reaching below zero; the table prints it clipped at zero, marked, with the legend.
func TestTableIntervalsInsideTheDomain(t *testing.T) {
	var samples []record.Sample
	for i, v := range []float64{1211, 3900} {
		samples = append(samples, record.Sample{Seq: i, Round: 1, Target: "local", Path: "same-node", Workload: "tcp-rr/64B",
			Metrics: map[string]float64{"latency_p50_us": v}})
	}
	for i, v := range []float64{413, 420, 4617, 4600, 430, 4580} {
		samples = append(samples, record.Sample{Seq: 10 + i, Round: 1, Target: "local", Path: "host-network", Workload: "tcp-crr/1",
			Metrics: map[string]float64{"connections_per_s": v}})
	}
	rows := analysis.Summarize(samples)
	var buf bytes.Buffer
	if err := Table(&buf, Document{Rows: rows}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"[0, 19639] c", "0 bimodal", "c: t-interval clipped to the metric's range", "bimodal: the samples form two separate groups"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	for _, r := range rows {
		if r.Summary.CILow < 0 {
			t.Errorf("%s %s: interval [%v, %v] below zero", r.Path, r.Metric, r.Summary.CILow, r.Summary.CIHigh)
		}
	}
}
