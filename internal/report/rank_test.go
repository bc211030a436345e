package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/analysis"
	"github.com/cnibench/cnibench/internal/record"
)

func rankSamples(target, metric string, values ...float64) []record.Sample {
	var out []record.Sample
	for i, v := range values {
		out = append(out, record.Sample{Seq: i, Round: i + 1, Target: target, Path: "cross-node", Workload: "tcp-stream/1",
			Metrics: map[string]float64{metric: v}})
	}
	return out
}

func TestRankOrdersTargetsAndTestsThemAgainstTheBest(t *testing.T) {
	var samples []record.Sample
	samples = append(samples, rankSamples("fast", "throughput_gbps", 10.1, 9.9, 10.0, 10.2, 9.8, 10.0)...)
	samples = append(samples, rankSamples("close", "throughput_gbps", 9.7, 10.3, 9.9, 10.1, 9.8, 9.9)...)
	samples = append(samples, rankSamples("slow", "throughput_gbps", 7.0, 7.1, 6.9, 7.2, 6.8, 7.0)...)
	samples = append(samples, record.Sample{Target: "slow", Path: "cross-node", Workload: "tcp-stream/1", Warmup: true,
		Metrics: map[string]float64{"throughput_gbps": 100}}) // a warm-up must not count
	groups := analysis.Rank(samples)
	if len(groups) != 1 {
		t.Fatalf("%d groups", len(groups))
	}
	e := groups[0].Entries
	if e[0].Target != "fast" || e[1].Target != "close" || e[2].Target != "slow" {
		t.Fatalf("order %s, %s, %s", e[0].Target, e[1].Target, e[2].Target)
	}
	if e[0].Verdict != "best" || e[1].Verdict != "not significant" || e[2].Verdict != "worse" {
		t.Errorf("verdicts %q %q %q", e[0].Verdict, e[1].Verdict, e[2].Verdict)
	}
	if r := e[2].RatioToBest; r < 0.69 || r > 0.71 {
		t.Errorf("ratio of slow to best = %g, want 0.70", r)
	}
	var buf bytes.Buffer
	WriteRanking(&buf, groups)
	// Every compared entry says on how many samples, and one that is not significant what it
	// could have detected.
	if !strings.Contains(buf.String(), "slow 7 [") || !strings.Contains(buf.String(), "x0.70 worse (p=") || !strings.Contains(buf.String(), "n.s. (p=") ||
		strings.Count(buf.String(), "n=6v6") != 2 || !strings.Contains(buf.String(), "could detect ") {
		t.Errorf("ranking text:\n%s", buf.String())
	}
}

func TestRankLowerIsBetterAndSingleTarget(t *testing.T) {
	var samples []record.Sample
	samples = append(samples, rankSamples("a", "latency_p50_us", 50, 51, 49, 50, 52)...)
	samples = append(samples, rankSamples("b", "latency_p50_us", 30, 31, 29, 30, 32)...)
	for i := range samples {
		samples[i].Workload = "tcp-rr/64B"
	}
	groups := analysis.Rank(samples)
	if len(groups) != 1 || groups[0].Entries[0].Target != "b" || groups[0].Entries[1].Verdict != "worse" {
		t.Errorf("lower latency must rank first: %+v", groups)
	}
	if g := analysis.Rank(rankSamples("only", "throughput_gbps", 1, 2, 3)); len(g) != 0 {
		t.Errorf("one target has nothing to rank: %+v", g)
	}
}
