package analysis

import (
	"math"
	"testing"

	"github.com/cnibench/cnibench/internal/catalog"
	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/suite"
)

// sampleOf is one measured sample of a cell in a round.
func sampleOf(target, path, workload string, round int, metric string, v float64) record.Sample {
	return record.Sample{RunID: "r", Round: round, Target: target, Path: path, Workload: workload, Metrics: map[string]float64{metric: v}}
}

// The run's figures are set beside the study's: each cell's mean and interval, their ratio,
// whether the run orders the two targets as the study did (and whether its own comparison
// decided it), and the study's relative figures as the run's ratio of the two targets.
func TestReferencesSetTheStudyBesideTheRun(t *testing.T) {
	var samples []record.Sample
	for round := 1; round <= 6; round++ {
		jitter := float64(round%3) * 0.05
		samples = append(samples,
			sampleOf("flannel", suite.CrossNode, "tcp-stream/1", round, catalog.Throughput, 5+jitter),
			sampleOf("cilium", suite.CrossNode, "tcp-stream/1", round, catalog.Throughput, 6+jitter),
			sampleOf("flannel", suite.SameNode, "tcp-stream/1", round, catalog.Throughput, 9+jitter))
	}
	samples = append(samples, record.Sample{Target: "cilium", Path: suite.CrossNode, Workload: "tcp-stream/1", Warmup: true,
		Metrics: map[string]float64{catalog.Throughput: 100}})
	ref := &suite.Reference{Study: "study", Figures: []suite.ReferenceFigure{
		{Target: "flannel", Path: suite.CrossNode, Workload: "tcp-stream/1", Metric: catalog.Throughput, Value: 1.48},
		{Target: "cilium", Path: suite.CrossNode, Workload: "tcp-stream/1", Metric: catalog.Throughput, Value: 1.53},
		{Target: "cilium", Against: "flannel", Path: suite.CrossNode, Workload: "tcp-stream/1", Metric: catalog.Throughput, Value: 0.9},
		{Target: "cilium", Path: suite.SameNode, Workload: "tcp-stream/1", Metric: catalog.Throughput, Value: 16.2},
	}}
	got := References(ref, samples)
	if got == nil || got.Study != "study" || len(got.Rows) != 4 {
		t.Fatalf("table %+v", got)
	}
	fl, ci, ratio, missing := got.Rows[0], got.Rows[1], got.Rows[2], got.Rows[3]
	if !fl.Measured || fl.N != 6 || math.Abs(fl.Ours-5.05) > 1e-9 || !(fl.Low < fl.Ours && fl.Ours < fl.High) || math.Abs(fl.Ratio-5.05/1.48) > 1e-9 || fl.Unit != "Gbit/s" {
		t.Errorf("flannel's figure %+v", fl)
	}
	if fl.Direction != DirectionAgrees || !fl.Decided || ci.Direction != DirectionAgrees || ci.Ours != 6.05 {
		t.Errorf("both runs find cilium higher, the run decidedly: %+v / %+v", fl, ci)
	}
	if !ratio.Measured || math.Abs(ratio.Ours-6.05/5.05) > 0.01 || ratio.Direction != DirectionOpposite || !ratio.Decided || ratio.Unit != "x" {
		t.Errorf("the study's ratio 0.9 against the run's 1.2: %+v", ratio)
	}
	if missing.Measured || !math.IsNaN(missing.Ratio) || missing.Direction != "" {
		t.Errorf("a cell the run did not measure: %+v", missing)
	}
	if References(nil, samples) != nil {
		t.Error("a suite without a study has no table")
	}
}

// A study that reported a figure per container is set beside the run's sum divided by the
// cell's pairs; the direction against the other target still compares the same cells.
func TestReferencesPerPair(t *testing.T) {
	var samples []record.Sample
	for round := 1; round <= 6; round++ {
		for _, s := range []record.Sample{
			sampleOf("containerd.runc", suite.CrossNode, "tcp-stream/1", round, catalog.Throughput, 100+float64(round)),
			sampleOf("crio.runc", suite.CrossNode, "tcp-stream/1", round, catalog.Throughput, 90+float64(round)),
		} {
			s.Pairs = 10
			samples = append(samples, s)
		}
	}
	ref := &suite.Reference{Study: "study", Figures: []suite.ReferenceFigure{
		{Target: "containerd.runc", Path: suite.CrossNode, Workload: "tcp-stream/1", Metric: catalog.Throughput, Pairs: 10, PerPair: true, Value: 9},
		{Target: "crio.runc", Path: suite.CrossNode, Workload: "tcp-stream/1", Metric: catalog.Throughput, Pairs: 10, PerPair: true, Value: 10},
	}}
	got := References(ref, samples)
	ctd := got.Rows[0]
	if !ctd.Measured || ctd.N != 6 || math.Abs(ctd.Ours-10.35) > 1e-9 || math.Abs(ctd.Ratio-10.35/9) > 1e-9 || !(ctd.Low < ctd.Ours && ctd.Ours < ctd.High) {
		t.Errorf("containerd's figure per pair: %+v", ctd)
	}
	if ctd.Direction != DirectionOpposite || !ctd.Decided {
		t.Errorf("the study found containerd lower, the run higher: %+v", ctd)
	}
}
