package runner

import (
	"math"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/analysis"
	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/suite"
)

func sample(target, path, workload string, metric string, v float64) record.Sample {
	return record.Sample{Target: target, Path: path, Workload: workload, Pairs: 1, Round: 1, Metrics: map[string]float64{metric: v}}
}

func TestPrecision(t *testing.T) {
	var samples []record.Sample
	// Throughput within ±1 %; latency spread ±30 %.
	for _, v := range []float64{10, 10.1, 9.9, 10.05, 9.95} {
		samples = append(samples, sample("a", "cross-node", "tcp-stream/1", "throughput_gbps", v))
	}
	for _, v := range []float64{30, 45, 20, 38, 25} {
		samples = append(samples, sample("a", "cross-node", "tcp-rr/64B", "latency_p50_us", v))
	}
	// A flagged and a failed sample would spoil the throughput if they counted.
	flagged := sample("a", "cross-node", "tcp-stream/1", "throughput_gbps", 2)
	flagged.Flags = []string{record.FlagSkew}
	failed := sample("a", "cross-node", "tcp-stream/1", "throughput_gbps", 0)
	failed.Error = "boom"
	warm := sample("a", "cross-node", "tcp-stream/1", "throughput_gbps", 50)
	warm.Warmup = true
	// One sample only: no interval yet. Setup figures are not rounds: never a miss.
	samples = append(samples, flagged, failed, warm,
		sample("b", "same-node", "tcp-stream/1", "throughput_gbps", 7),
		sample("a", SetupPath, "pod-startup", "pod_ready_p50_ms", 300))
	misses, cells := Precision(samples, 0.05)
	if cells != 3 {
		t.Errorf("%d cells, want 3 (setup left out)", cells)
	}
	if len(misses) != 2 {
		t.Fatalf("misses %+v, want the latency and the single sample", misses)
	}
	if m := misses[0]; m.Workload != "tcp-rr/64B" || m.Metric != "latency_p50_us" || m.N != 5 || !(m.RelCI > 0.05) {
		t.Errorf("first miss %+v, want tcp-rr p50 above 5 %%", m)
	}
	if m := misses[1]; m.Target != "b" || m.N != 1 || !math.IsNaN(m.RelCI) {
		t.Errorf("second miss %+v, want target b with one sample and no interval", m)
	}
	// Loose enough for the latency, and constant figures always meet the target.
	samples = append(samples, sample("b", "same-node", "tcp-stream/1", "throughput_gbps", 7))
	if misses, _ := Precision(samples, 0.5); len(misses) != 0 {
		t.Errorf("at ±50 %%: misses %+v", misses)
	}
}

func TestExtraRound(t *testing.T) {
	s := suite.Default()
	s.Targets = []suite.Target{{Name: "a"}, {Name: "b"}}
	s.Paths = []string{suite.HostNetwork, suite.CrossNode}
	s.Workloads = s.Workloads[:2] // tcp-stream/1 and /4
	s.Seed = 7
	misses := []Miss{{Target: "b", Path: suite.CrossNode, Workload: "tcp-stream/4", Pairs: 1}}
	steps := extraRound(s, misses, 6, 100)
	if len(steps) != 2 {
		t.Fatalf("%d steps, want both targets of the missed group: %+v", len(steps), steps)
	}
	seen := map[string]bool{}
	for i, st := range steps {
		if st.Seq != 101+i || st.Round != 6 || st.Warmup() || st.Duration != 4*time.Second {
			t.Errorf("step %+v", st)
		}
		if st.Combo.Path != suite.CrossNode || st.Combo.Workload.Streams != 4 {
			t.Errorf("step outside the missed group: %+v", st.Combo)
		}
		seen[st.Combo.Target] = true
	}
	if !seen["a"] || !seen["b"] {
		t.Errorf("targets %v, want a and b", seen)
	}
	if label := roundLabel(steps[0], 5); label != "round 6+" {
		t.Errorf("label %q", label)
	}
}

// No cell stops below the n its comparison needs: three precise samples a path are enough
// for a ±5 % interval but not for the verdict's comparison with the baseline (3 against 3
// cannot reach p < 0.05), four are; and a group that meets the target is confirmed on a second
// check before it stops.
func TestPrecisionWaitsForTestableAndConfirmed(t *testing.T) {
	var samples []record.Sample
	add := func(n int) {
		for i := 0; i < n; i++ {
			samples = append(samples,
				sample("local", suite.HostNetwork, "tcp-stream/1", "throughput_gbps", 20+0.01*float64(i)),
				sample("local", suite.CrossNode, "tcp-stream/1", "throughput_gbps", 15+0.01*float64(i)))
		}
	}
	add(3)
	if misses, _ := Precision(samples, 0.05); len(misses) != 0 {
		t.Fatalf("precise figures missed: %+v", misses)
	}
	um := untestableMisses(analysis.Verdict(samples))
	if len(um) != 2 || !um[0].Untestable || um[0].Target != "" {
		t.Fatalf("3 v 3: untestable misses %+v, want both paths of the comparison", um)
	}
	add(1)
	if um := untestableMisses(analysis.Verdict(samples)); len(um) != 0 {
		t.Fatalf("4 v 4: untestable misses %+v, want none", um)
	}
	held := map[group]int{}
	if got := unconfirmed(nil, samples, held); counted(got) != 0 || len(got) != 2 {
		t.Fatalf("first check: %+v, want two confirming rounds and no real miss", got)
	}
	if got := unconfirmed(nil, samples, held); len(got) != 0 {
		t.Fatalf("second check: %+v, want none", got)
	}
	missed := []Miss{{Path: suite.CrossNode, Workload: "tcp-stream/1", Pairs: 1}}
	if got := unconfirmed(missed, samples, held); len(got) != 1 || held[group{suite.CrossNode, "tcp-stream/1", 1}] != 0 {
		t.Fatalf("a miss resets its group: %+v, held %v", got, held)
	}
}

// Setup figures of two targets (pods per round: one a round) are untestable at three rounds
// too, but no round adds them alone: they must not become misses that no step can serve.
func TestUntestableSetupFiguresAreNotMisses(t *testing.T) {
	var samples []record.Sample
	for i := 0; i < 3; i++ {
		for _, tg := range []string{"a", "b"} {
			samples = append(samples, sample(tg, SetupPath, "pod-startup", "pod_ready_p50_ms", 300+float64(i)+map[string]float64{"a": 0, "b": 50}[tg]))
		}
	}
	if um := untestableMisses(analysis.Verdict(samples)); len(um) != 0 {
		t.Errorf("setup figures became misses: %+v", um)
	}
}

// A figure too wide and untestable at once is one figure in the progress line's count, however
// its untestable comparison names it.
func TestCountedOncePerFigure(t *testing.T) {
	misses := []Miss{
		{Target: "a", Path: "cross-node", Workload: "tcp-rr/64B", Pairs: 1},
		{Target: "a", Path: "cross-node", Workload: "tcp-rr/64B", Pairs: 1, Untestable: true},
		{Target: "b", Path: "cross-node", Workload: "tcp-rr/64B", Pairs: 1, Untestable: true},
		{Target: "local", Path: "same-node", Workload: "tcp-rr/64B"},
		{Path: "same-node", Workload: "tcp-rr/64B", Untestable: true},
		{Path: "host-network", Workload: "tcp-rr/64B", Untestable: true},
		{Path: "localhost", Workload: "tcp-rr/64B", Confirming: true},
	}
	if got := counted(misses); got != 4 {
		t.Errorf("counted %d figures, want 4 (a and b cross-node, same-node, host-network)", got)
	}
}

// A comparison is decided when its targets differ beyond doubt or lie within the margin of
// each other; in between it is a miss that names its reference and its interval.
func TestUndecidedComparisons(t *testing.T) {
	build := func(b []float64) []record.Sample {
		var out []record.Sample
		for i, v := range b {
			for tg, x := range map[string]float64{"a": 10, "b": v} {
				s := sample(tg, suite.CrossNode, "tcp-stream/1", "throughput_gbps", x*(1+0.001*float64(i)))
				s.Round = i + 1
				out = append(out, s)
			}
		}
		return out
	}
	for _, c := range []struct {
		name      string
		b         []float64
		undecided bool
	}{
		{"a 30 % difference", []float64{13, 13.1, 12.9, 13, 13.05, 12.95}, false},
		{"the same within 0.5 %", []float64{10, 10.02, 9.98, 10.01, 9.99, 10}, false},
		{"a few per cent either way", []float64{10.4, 9.6, 10.5, 9.5, 10.3, 9.8}, true},
	} {
		um := undecidedMisses(analysis.Verdict(build(c.b)), suite.DefaultMargin)
		if got := len(um) > 0; got != c.undecided {
			t.Errorf("%s: undecided %v (%+v), want %v", c.name, got, um, c.undecided)
			continue
		}
		if c.undecided && (!um[0].Undecided || um[0].Against == "" || !(um[0].RatioLow < 1 && 1 < um[0].RatioHigh)) {
			t.Errorf("%s: the miss %+v does not say what it is undecided against", c.name, um[0])
		}
	}
	if um := undecidedMisses(analysis.Verdict(build([]float64{10.4, 9.6, 10.5, 9.5, 10.3, 9.8})), 0); um != nil {
		t.Errorf("no margin: %+v, want the rule off", um)
	}
}
