package compare

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/export"
	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/stats"
)

// aaRun is a real A/A run on this kind of machine (2 cores, about 14 % steal): two identical
// two-node bridge clusters measured interleaved at the default rounds (3, then more while a
// headline's interval was wider than ±5 %), cross-node, tcp-stream/1, tcp-rr/64B and
// tcp-crr/64B, exported with `cnibench results export RUN -o json`.
const aaRun = "testdata/aa-run.json"

// bundleSource serves one exported run, as the store would.
type bundleSource struct{ b export.Bundle }

func (s bundleSource) Run(_ context.Context, id string) (record.Run, error) {
	if !strings.HasPrefix(s.b.Run.ID, id) {
		return record.Run{}, fmt.Errorf("no run %q", id)
	}
	return s.b.Run, nil
}

func (s bundleSource) Targets(context.Context, string) ([]record.Target, error) {
	return s.b.Targets, nil
}

func (s bundleSource) Samples(context.Context, string) ([]record.Sample, error) {
	return s.b.Samples, nil
}

// shifted is the run with one target's metric scaled by factor, and nothing else changed.
func shifted(b export.Bundle, target, metric string, factor float64) export.Bundle {
	out := b
	out.Samples = make([]record.Sample, len(b.Samples))
	for i, s := range b.Samples {
		if s.Target == target && s.Metrics[metric] != 0 {
			m := make(map[string]float64, len(s.Metrics))
			for k, v := range s.Metrics {
				m[k] = v
			}
			m[metric] *= factor
			s.Metrics = m
		}
		out.Samples[i] = s
	}
	return out
}

// TestGateOnRealSamples: on the real A/A run the gate does not fail (identical clusters are
// not "worse"), and the same samples with one target's headline made 10 % worse, and nothing
// else, never pass it, for throughput, request/response latency and connection rate in turn,
// at the rounds the run made: the gate fails them or, where its power at this noise and n
// falls short of 10 %, says it is inconclusive.
func TestGateOnRealSamples(t *testing.T) {
	b := readBundle(t, aaRun)
	a, bt := b.Targets[0].Name, b.Targets[1].Name
	gateWith := func(bundle export.Bundle, pairing stats.Pairing) (Result, error) {
		res, err := Compare(context.Background(), bundleSource{bundle}, Options{A: Side{Run: bundle.Run.ID, Target: a},
			B: Side{Run: bundle.Run.ID, Target: bt}, Seed: DefaultSeed, Pairing: pairing})
		if err != nil {
			t.Fatal(err)
		}
		return res, Gate{}.Check(res)
	}
	var inc *InconclusiveError
	gate := func(bundle export.Bundle) (Result, error) { return gateWith(bundle, stats.PairAuto) }
	res, err := gate(b)
	if err != nil && !errors.As(err, &inc) {
		t.Errorf("A/A: the gate fails identical clusters: %v", err)
	}
	for _, r := range res.Rows {
		if r.Path != record.SetupPath && (r.Metric == "throughput_gbps" || r.Metric == "latency_p50_us" || r.Metric == "connections_per_s") {
			t.Logf("A/A %s %s: B/A %.3f [%.3f, %.3f] p %.2g, n %d v %d, paired %v, %s", r.Workload, r.Metric,
				r.Ratio, r.RatioLow, r.RatioHigh, r.PValue, r.NA, r.NB, r.Paired, verdictText(r))
		}
	}
	for _, c := range []struct {
		metric string
		factor float64
	}{{"throughput_gbps", 0.9}, {"latency_p50_us", 1.1}, {"connections_per_s", 0.9}} {
		res, err := gate(shifted(b, bt, c.metric, c.factor))
		for _, r := range res.Rows {
			if r.Metric == c.metric && r.Path != record.SetupPath {
				t.Logf("%s x%.1f: B/A %.3f [%.3f, %.3f] p %.2g, n %d v %d, paired %v, %s", c.metric, c.factor,
					r.Ratio, r.RatioLow, r.RatioHigh, r.PValue, r.NA, r.NB, r.Paired, verdictText(r))
			}
		}
		if err == nil || !errors.As(err, &inc) && !strings.Contains(err.Error(), c.metric) {
			t.Errorf("%s made 10 %% worse: the gate says %v", c.metric, err)
		}
		t.Logf("%s x%.1f: gate %v", c.metric, c.factor, err)
		// For the record: what the unpaired analysis of the same samples says.
		_, unpaired := gateWith(shifted(b, bt, c.metric, c.factor), stats.PairOff)
		t.Logf("%s x%.1f unpaired: gate fails: %v", c.metric, c.factor, unpaired != nil)
	}
}
