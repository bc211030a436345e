package runner

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/agentcmd"
	"github.com/cnibench/cnibench/internal/catalog"
	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/stats"
)

// agentReport is what `cnibench agent run` prints for an rr client whose latencies are xs.
func agentReport(t *testing.T, start int64, rate float64, xs ...float64) agentcmd.RunReport {
	h := stats.NewHist()
	for _, x := range xs {
		if err := h.Add(x); err != nil {
			t.Fatal(err)
		}
	}
	res := agentcmd.Result{Tool: "cnibench", Mode: "rr", DurationSec: 1, Transactions: int64(len(xs)), RatePerSec: rate,
		LatencyUsec: agentcmd.Latencies{P50: xs[len(xs)/2], P99: xs[len(xs)-1]}, Histogram: h}
	out, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return agentcmd.RunReport{StartNS: start, Stdout: string(out)}
}

func TestCombineMergesLatenciesAndSumsRates(t *testing.T) {
	eng, err := engine.ByName(engine.NameCnibench)
	if err != nil {
		t.Fatal(err)
	}
	ew := engine.Workload{Kind: engine.TCPRR, MessageSize: 1, Duration: time.Second}
	// Pair 0 is fast and busy, pair 1 slow: 90 fast transactions and 10 slow ones.
	var fast, slow []float64
	for i := 0; i < 90; i++ {
		fast = append(fast, 10+float64(i)/100)
	}
	for i := 0; i < 10; i++ {
		slow = append(slow, 1000+float64(i))
	}
	reports := []agentcmd.RunReport{agentReport(t, 1_000_000, 900, fast...), agentReport(t, 4_000_000, 100, slow...)}
	fig, err := combine(eng, ew, reports)
	if err != nil {
		t.Fatal(err)
	}
	m := fig.metrics
	if m[catalog.TransactionRate] != 1000 {
		t.Errorf("aggregate rate %v, want the sum 1000", m[catalog.TransactionRate])
	}
	// Over all 100 transactions the median is a fast one and the p99 a slow one; the mean of
	// the two pairs' medians (about 505) would be no latency anybody saw.
	if p50 := m[catalog.LatencyP50]; p50 < 10 || p50 > 11 {
		t.Errorf("merged p50 %v, want a fast transaction's", p50)
	}
	if p99 := m[catalog.LatencyP99]; p99 < 990 {
		t.Errorf("merged p99 %v, want a slow transaction's", p99)
	}
	if p90 := m[catalog.LatencyP90]; p90 > 11 {
		t.Errorf("merged p90 %v: the 90th of 100 transactions is the last fast one", p90)
	}
	wantJain := 1000.0 * 1000 / (2 * (900*900 + 100*100))
	if math.Abs(m[catalog.Fairness]-wantJain) > 1e-12 {
		t.Errorf("fairness %v, want %v", m[catalog.Fairness], wantJain)
	}
	if m["transactions_per_s_pair_min"] != 100 || m["transactions_per_s_pair_max"] != 900 || m["transactions_per_s_pair_median"] != 500 {
		t.Errorf("pair distribution %v", m)
	}
	if fig.skew != 3*time.Millisecond || m[catalog.StartSkew] != 3 {
		t.Errorf("skew %v (%v ms), want 3ms", fig.skew, m[catalog.StartSkew])
	}
	var raw []map[string]any
	if err := json.Unmarshal([]byte(fig.raw), &raw); err != nil || len(raw) != 2 {
		t.Fatalf("raw: %v, %.200s", err, fig.raw)
	}
	for _, r := range raw {
		if _, ok := r["histogram_us"]; ok || r["stdout"] == "" {
			t.Errorf("raw keeps each pair's output, without the wrapper's histogram: %.200v", r)
		}
	}
}

func TestCombineOnePairKeepsTheToolsFigures(t *testing.T) {
	eng, _ := engine.ByName(engine.NameCnibench)
	ew := engine.Workload{Kind: engine.TCPRR, MessageSize: 1, Duration: time.Second}
	rep := agentReport(t, 5, 900, 10, 11, 12)
	fig, err := combine(eng, ew, []agentcmd.RunReport{rep})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := fig.metrics[catalog.Fairness]; ok || fig.metrics[catalog.LatencyP50] != 11 || fig.raw != rep.Stdout {
		t.Errorf("one pair: %v raw %q", fig.metrics, fig.raw)
	}
}

func TestAggregateWithoutHistogramsOmitsPercentiles(t *testing.T) {
	per := []engine.Metrics{
		{catalog.Throughput: 4, catalog.Jitter: 0.1, catalog.Loss: 1, catalog.LatencyP99: 50},
		{catalog.Throughput: 6, catalog.Jitter: 0.3, catalog.Loss: 3, catalog.LatencyP99: 70},
	}
	m := aggregate(engine.UDPStream, per, nil)
	if m[catalog.Throughput] != 10 || math.Abs(m[catalog.Jitter]-0.2) > 1e-12 || m[catalog.Loss] != 2 {
		t.Errorf("aggregate %v", m)
	}
	if _, ok := m[catalog.LatencyP99]; ok {
		t.Error("a percentile averaged over pairs")
	}
}

func TestCombineNamesTheFailedPair(t *testing.T) {
	eng, _ := engine.ByName(engine.NameIPerf3)
	ew := engine.Workload{Kind: engine.TCPStream, Streams: 1, Duration: time.Second}
	_, err := combine(eng, ew, []agentcmd.RunReport{{Stdout: "{}"}, {Stdout: `{"error": "unable to connect"}`, ExitCode: 1, Stderr: "boom"}})
	if err == nil || !strings.Contains(err.Error(), "pair 0") && !strings.Contains(err.Error(), "pair 1") {
		t.Errorf("err = %v", err)
	}
}
