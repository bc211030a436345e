package compare

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/export"
	"github.com/cnibench/cnibench/internal/label"
	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/stats"
)

// aaSuiteRun is a real A/A run of the default suite: two identical two-node bridge clusters
// measured interleaved over its 20 cells (host-network, same-node, cross-node and localhost;
// tcp-stream with 1 and 4 streams, udp-stream at 500 Mbit/s, tcp-rr and tcp-crr) and the setup
// figures, 7 rounds, precision off, on this kind of machine (2 cores), exported with
// `cnibench results export RUN -o json`. How it was made: docs/results.md.
const aaSuiteRun = "testdata/aa-default-suite.json"

// readBundle reads an exported run.
func readBundle(t *testing.T, path string) export.Bundle {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := export.ReadJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Targets) != 2 {
		t.Fatalf("%d targets in %s, want 2", len(b.Targets), path)
	}
	return b
}

// rounds returns the measured samples of b by round, each round's in its order.
func rounds(b export.Bundle) [][]record.Sample {
	by := map[int][]record.Sample{}
	for _, s := range b.Samples {
		if !s.Warmup && s.Round > 0 {
			by[s.Round] = append(by[s.Round], s)
		}
	}
	keys := make([]int, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	out := make([][]record.Sample, len(keys))
	for i, k := range keys {
		out[i] = by[k]
	}
	return out
}

// replicate builds a run of n rounds from the A/A run: rounds drawn from its rounds (all of
// them in order when n is their number, else with replacement), and in each round and cell the
// two targets' samples swapped with probability 1/2. Under "nothing changed" every replicate is
// as likely as the run itself, so the gate's failures over replicates are its false failures.
func replicate(b export.Bundle, n int, rng *rand.Rand) export.Bundle {
	all := rounds(b)
	ta, tb := b.Targets[0].Name, b.Targets[1].Name
	out := b
	out.Samples = nil
	for r := range n {
		src := all[r%len(all)]
		if n != len(all) {
			src = all[rng.IntN(len(all))]
		}
		swap := map[record.Cell]bool{}
		for _, s := range src {
			c := s.Cell()
			c.Target = ""
			if _, seen := swap[c]; !seen {
				swap[c] = rng.IntN(2) == 1
			}
			if swap[c] {
				if s.Target == ta {
					s.Target = tb
				} else {
					s.Target = ta
				}
			}
			s.Round = r + 1
			s.Seq = len(out.Samples)
			out.Samples = append(out.Samples, s)
		}
	}
	return out
}

// injected is b with target's verdict metric of one cell made worse by factor (a throughput
// times 0.9, a latency times 1.1).
func injected(b export.Bundle, target string, cell Cell, metric string, factor float64) export.Bundle {
	out := b
	out.Samples = make([]record.Sample, len(b.Samples))
	for i, s := range b.Samples {
		if s.Target == target && s.Path == cell.Path && s.Workload == cell.Workload && s.Metrics[metric] != 0 {
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

// verdictMetrics are the default suite's cells' verdict metrics: comparing only them (and what a
// gate adds) gives the gate the same family in a fraction of the time.
func verdictMetrics(g Gate) []string {
	return append([]string{"throughput_gbps", "loss_pct", "latency_p50_us", "connections_per_s"}, g.Metrics...)
}

// centered is b with the second target's metric in one cell scaled so that its mean log ratio
// to the first, round by round, is 0. The plan sees the spread of the per-round ratios around
// their mean; swapped replicates of the run have the spread around 1, which holds the run's
// own chance offset between its two clusters too (cross-node tcp-stream/1 +3.0 %, p 0.10;
// tcp-crr -5.3 %, p 0.22; no cell of the 20 differs at p < 0.05). Centred, the replicates'
// noise is the noise the plan measured.
func centered(b export.Bundle, cell Cell, metric string) export.Bundle {
	byRound := map[int][2]float64{}
	for _, s := range b.Samples {
		if s.Warmup || s.Path != cell.Path || s.Workload != cell.Workload || s.Metrics[metric] <= 0 {
			continue
		}
		v := byRound[s.Round]
		if s.Target == b.Targets[0].Name {
			v[0] = s.Metrics[metric]
		} else {
			v[1] = s.Metrics[metric]
		}
		byRound[s.Round] = v
	}
	sum, n := 0.0, 0
	for _, v := range byRound {
		if v[0] > 0 && v[1] > 0 {
			sum, n = sum+math.Log(v[1]/v[0]), n+1
		}
	}
	return injected(b, b.Targets[1].Name, cell, metric, math.Exp(-sum/float64(max(n, 1))))
}

// judge compares the two targets of b and gates the comparison.
func judge(t *testing.T, b export.Bundle, g Gate) GateResult {
	t.Helper()
	res, err := Compare(context.Background(), bundleSource{b}, Options{A: Side{Run: b.Run.ID, Target: b.Targets[0].Name},
		B: Side{Run: b.Run.ID, Target: b.Targets[1].Name}, Seed: DefaultSeed, Metrics: verdictMetrics(g)})
	if err != nil {
		t.Fatal(err)
	}
	return g.Evaluate(res)
}

// TestGateFalseFailuresOnAA: with nothing changed, over within-round swaps of a real A/A run of
// the default suite, the gate fails at most 5 % of the time, at the default family (every
// cell's verdict metric) and with p99 latency added.
func TestGateFalseFailuresOnAA(t *testing.T) {
	b := readBundle(t, aaSuiteRun)
	n := len(rounds(b))
	rng := rand.New(rand.NewPCG(1, 2))
	const replicates = 400
	for _, g := range []Gate{{}, {Metrics: []string{"latency_p99_us"}}} {
		fails, inconclusive, family := 0, 0, 0
		for range replicates {
			j := judge(t, replicate(b, n, rng), g)
			family = j.Family
			switch j.Outcome {
			case GateFail:
				fails++
			case GateInconclusive:
				inconclusive++
			}
		}
		rate := float64(fails) / replicates
		t.Logf("gate %v, %d rounds, family of %d: false failures %.3f, inconclusive %.3f", g.Metrics, n, family, rate, float64(inconclusive)/replicates)
		if rate > within5(replicates) {
			t.Errorf("gate %v: nothing changed, and it failed %.3f of the time", g.Metrics, rate)
		}
	}
}

// TestGateCatchesAtPlannedRounds: a 10 % regression injected into one cell's verdict metric is
// caught at least 80 % of the time at the rounds the gate prescribed for that cell from the A/A
// run's own noise, for cross-node throughput, RR latency and connection rate and localhost
// throughput in turn; at the run's own rounds, where the gate said it could not catch 10 %, the
// regression is never passed: it is caught or the gate is inconclusive.
func TestGateCatchesAtPlannedRounds(t *testing.T) {
	b := readBundle(t, aaSuiteRun)
	n := len(rounds(b))
	planned := judge(t, b, Gate{})
	t.Logf("plans from the run as measured; replicates of it with the tested cell's two clusters centred on each other (centered)")
	rng := rand.New(rand.NewPCG(3, 4))
	const replicates = 400
	for _, c := range []struct {
		cell   Cell
		metric string
		factor float64
	}{
		{Cell{"cross-node", "tcp-stream/1", 1}, "throughput_gbps", 0.9},
		{Cell{"cross-node", "tcp-rr/64B", 1}, "latency_p50_us", 1.1},
		{Cell{"cross-node", "tcp-crr/64B", 1}, "connections_per_s", 0.9},
		{Cell{"localhost", "tcp-stream/1", 1}, "throughput_gbps", 0.9},
	} {
		var row *GateRow
		for i, r := range planned.Rows {
			if r.Row.Path == c.cell.Path && r.Row.Workload == c.cell.Workload && r.Row.Metric == c.metric {
				row = &planned.Rows[i]
			}
		}
		if row == nil {
			t.Fatalf("%s %s %s is not gated", c.cell.Path, c.cell.Workload, c.metric)
		}
		want := max(row.Rounds, stats.MinPairedBlocks)
		caught, passed := 0, 0
		same := centered(b, c.cell, c.metric)
		for range replicates {
			j := judge(t, injected(replicate(same, want, rng), b.Targets[1].Name, c.cell, c.metric, c.factor), Gate{})
			if failedOn(j, c.cell, c.metric) {
				caught++
			}
			if j.Outcome == GatePass {
				passed++
			}
		}
		rate := float64(caught) / replicates
		t.Logf("%s %s %s x%.1f: at %d rounds the gate could catch %.3g %%, prescribed %d rounds; caught %.3f there, passed %.3f",
			c.cell.Path, c.cell.Workload, c.metric, c.factor, n, row.Detectable*100, row.Rounds, rate, float64(passed)/replicates)
		if rate < 0.8 {
			t.Errorf("%s %s: a 10 %% regression caught %.3f of the time at the %d rounds prescribed", c.cell.Path, c.metric, rate, want)
		}
		// At the run's own rounds: never a pass where the gate could not see 10 %.
		for range replicates / 4 {
			j := judge(t, injected(replicate(b, n, rng), b.Targets[1].Name, c.cell, c.metric, c.factor), Gate{})
			if j.Outcome == GatePass && !failedOn(j, c.cell, c.metric) && gateRowOf(j, c.cell, c.metric).Weak {
				t.Errorf("%s %s: passed a 10 %% regression it said it could not catch", c.cell.Path, c.metric)
			}
		}
	}
}

// within5 is the most false failures in n replicates that a 5 % error rate explains: 5 % plus
// two binomial standard errors (the replicates are seeded, so a rate that passes once always
// does; the bound keeps a true 5 % from failing for the seed's luck).
func within5(n int) float64 { return 0.05 + 2*math.Sqrt(0.05*0.95/float64(n)) }

func gateRowOf(j GateResult, c Cell, metric string) GateRow {
	for _, r := range j.Rows {
		if r.Row.Path == c.Path && r.Row.Workload == c.Workload && r.Row.Metric == metric {
			return r
		}
	}
	return GateRow{}
}

func failedOn(j GateResult, c Cell, metric string) bool { return gateRowOf(j, c, metric).Failed }

// poolSource is a store of several exported runs.
type poolSource struct{ runs []export.Bundle }

func (p poolSource) find(id string) (export.Bundle, error) {
	for _, b := range p.runs {
		if b.Run.ID == id {
			return b, nil
		}
	}
	return export.Bundle{}, fmt.Errorf("no run %q", id)
}

func (p poolSource) Run(_ context.Context, id string) (record.Run, error) {
	b, err := p.find(id)
	return b.Run, err
}

func (p poolSource) Targets(_ context.Context, id string) ([]record.Target, error) {
	b, err := p.find(id)
	return b.Targets, err
}

func (p poolSource) Samples(_ context.Context, id string) ([]record.Sample, error) {
	b, err := p.find(id)
	return b.Samples, err
}

func (p poolSource) Runs(context.Context) ([]record.Run, error) {
	out := make([]record.Run, len(p.runs))
	for i, b := range p.runs {
		out[i] = b.Run
	}
	return out, nil
}

// pseudoRun is one target's run of n rounds drawn from the A/A run, as a CI's nightly run of
// the default suite would store it.
func pseudoRun(b export.Bundle, id string, started time.Time, labels map[string]string, n int, rng *rand.Rand) export.Bundle {
	r := replicate(b, n, rng)
	out := export.Bundle{Run: record.Run{ID: id, Started: started, Status: record.StatusComplete, Labels: labels},
		Targets: []record.Target{{RunID: id, Name: "local"}}}
	for _, s := range r.Samples {
		if s.Target == b.Targets[0].Name {
			s.RunID, s.Target = id, "local"
			out.Samples = append(out.Samples, s)
		}
	}
	return out
}

// TestPooledBaselineOnAA: against ten stored runs of the default suite (drawn from the A/A run
// at the default 3 rounds each), a new run with nothing changed fails the gate at most 5 % of
// the time, and one with a 10 % drop of cross-node throughput is caught at the rate logged.
// Runs drawn from one A/A run lack the spread between days and new clusters that real stored
// runs have, so the catch rate here is an upper bound for a CI's.
func TestPooledBaselineOnAA(t *testing.T) {
	b := readBundle(t, aaSuiteRun)
	rng := rand.New(rand.NewPCG(5, 6))
	sel, err := label.ParseSelector("branch=main")
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	cell := Cell{"cross-node", "tcp-stream/1", 1}
	const replicates = 400
	falseFails, caught := 0, 0
	for rep := range replicates {
		var src poolSource
		for i := range 10 {
			src.runs = append(src.runs, pseudoRun(b, fmt.Sprintf("base-%d", i), t0.Add(time.Duration(i)*24*time.Hour),
				map[string]string{"branch": "main"}, 3, rng))
		}
		src.runs = append(src.runs, pseudoRun(b, "other", t0.Add(240*time.Hour), map[string]string{"branch": "dev"}, 3, rng))
		fresh := pseudoRun(b, "new", t0.Add(300*time.Hour), nil, 3, rng)
		for _, factor := range []float64{1, 0.9} {
			run := injected(fresh, "local", cell, "throughput_gbps", factor)
			res, err := ComparePooled(context.Background(), poolSource{runs: append(src.runs, run)},
				PoolOptions{B: Side{Run: "new"}, Selector: sel, Metrics: verdictMetrics(Gate{})})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Pool) != 10 || res.Pool[0] != "base-0" {
				t.Fatalf("pool %v, want base-0..base-9", res.Pool)
			}
			j := Gate{}.Evaluate(res)
			if rep == 0 && factor == 1 {
				t.Logf("pooled: family of %d; %s", j.Family, j.Headline())
			}
			switch {
			case factor == 1 && j.Outcome == GateFail:
				falseFails++
			case factor != 1 && failedOn(j, cell, "throughput_gbps"):
				caught++
			}
		}
	}
	t.Logf("pooled over 10 runs of 3 rounds: nothing changed fails %.2f; 10 %% cross-node throughput drop caught %.2f",
		float64(falseFails)/replicates, float64(caught)/replicates)
	if float64(falseFails)/replicates > within5(replicates) {
		t.Errorf("pooled: nothing changed failed %.2f of the time", float64(falseFails)/replicates)
	}
}
