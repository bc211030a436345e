package history

import (
	"github.com/cnibench/cnibench/internal/testsupport/aarun"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/analysis"
	"github.com/cnibench/cnibench/internal/catalog"
	"github.com/cnibench/cnibench/internal/changepoint"
	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/stats"
)

// cellRounds is one cell's verdict metric, round by round, over both twins of the A/A run: the
// values a 3-round run of that cell draws from.
type cellRounds struct {
	name, metric string
	values       []float64
}

func aaCells(t *testing.T) []cellRounds {
	t.Helper()
	b := aarun.Load(t)
	byCell := map[string]map[string][]float64{}
	for _, s := range b.Samples {
		if s.Warmup || s.Round == 0 || s.Error != "" || s.Path == record.SetupPath {
			continue
		}
		k := s.Path + " " + s.Workload
		if byCell[k] == nil {
			byCell[k] = map[string][]float64{}
		}
		for m, v := range s.Metrics {
			byCell[k][m] = append(byCell[k][m], v)
		}
	}
	var out []cellRounds
	for k, metrics := range byCell {
		_, workload, _ := strings.Cut(k, " ")
		m := analysis.VerdictMetric(workload, metrics)
		out = append(out, cellRounds{name: k + " " + m, metric: m, values: metrics[m]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// runMeans is a series of n run means of 3 rounds each drawn from a cell's real rounds, from
// run at on scaled by factor.
func runMeans(c cellRounds, n, at int, factor float64, rng *rand.Rand) []float64 {
	out := make([]float64, n)
	for i := range out {
		sum := 0.0
		for range 3 {
			sum += c.values[rng.IntN(len(c.values))]
		}
		out[i] = sum / 3
		if i >= at {
			out[i] *= factor
		}
	}
	return out
}

// TestChangePointsOnMachineNoise: series of 30 runs of the default suite's cells, each run 3
// rounds drawn from the A/A run's real samples (this machine's noise, cell by cell), a 10 %
// step at run 15 in the cell's worse direction. Over every cell, the step is found within one
// run of its place in at least 90 % of series where the run means' spread is at most 4 %, and
// a flat series gets a false change point at most 5 % of the time (each series at 5 %, as
// `history` of one series); the detection rate of every cell is logged with its spread.
func TestChangePointsOnMachineNoise(t *testing.T) {
	const series = 200
	rng := rand.New(rand.NewPCG(41, 42))
	var quietHits, quietN, falseAlarms, flatN int
	for _, c := range aaCells(t) {
		s := stats.Summarize(c.values)
		cv := s.StdDev / s.Mean / math.Sqrt(3)
		factor := 1.1 // a latency up, a loss up
		if spec, _ := catalog.Lookup(c.metric); spec.HigherIsBetter {
			factor = 0.9 // a throughput or a rate down
		}
		hits, alarms := 0, 0
		for range series {
			found, err := changepoint.Detect(runMeans(c, 30, 15, factor, rng), changepoint.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, ch := range found {
				if ch.Index >= 14 && ch.Index <= 16 {
					hits++
					break
				}
			}
			flat, _ := changepoint.Detect(runMeans(c, 30, 30, 1, rng), changepoint.Options{})
			if len(flat) > 0 {
				alarms++
			}
		}
		t.Logf("%-45s run-mean spread %4.1f %%: step within ±1 %.2f, flat false %.3f", c.name, cv*100, float64(hits)/series, float64(alarms)/series)
		if cv <= 0.04 {
			quietHits, quietN = quietHits+hits, quietN+series
		}
		falseAlarms, flatN = falseAlarms+alarms, flatN+series
	}
	t.Logf("cells with run means within 4 %%: step found within ±1 in %.3f; flat series, false change point %.3f over all cells",
		float64(quietHits)/float64(max(quietN, 1)), float64(falseAlarms)/float64(flatN))
	if quietN == 0 || float64(quietHits)/float64(quietN) < 0.9 {
		t.Errorf("step found within one run in %d of %d series of the quieter cells", quietHits, quietN)
	}
	if rate := float64(falseAlarms) / float64(flatN); rate > 0.05 {
		t.Errorf("flat series: a false change point in %.3f", rate)
	}
}
