package runner

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/cnibench/cnibench/internal/catalog"
	"github.com/cnibench/cnibench/internal/report"
	"github.com/cnibench/cnibench/internal/store"
	"github.com/cnibench/cnibench/internal/suite"
)

// group is what one comparison is about: a workload at a concurrency on a path. Adaptive
// rounds measure every target of a group that misses the precision target, so that the
// configurations it compares stay interleaved.
type group struct {
	Path, Workload string
	Pairs          int
}

// Miss is a group whose headline figure is less precise than the target, for one target.
type Miss struct {
	Target, Path, Workload, Metric string
	Pairs                          int
	// RelCI is the CI half-width over the mean; NaN with fewer than two usable samples.
	RelCI float64
	N     int
}

// Precision checks the headline figure of every measured cell (the first of
// catalog.ProgressOrder it has) against target, a fraction of the mean: warm-up, failed
// and flagged samples do not count. It returns the cells that miss it and how many cells
// there are.
func Precision(samples []store.Sample, target float64) (misses []Miss, cells int) {
	values := map[store.Cell]map[string][]float64{}
	for _, s := range samples {
		if s.Warmup || s.Error != "" || len(s.Flags) > 0 || s.Path == SetupPath {
			continue
		}
		c := s.Cell()
		if values[c] == nil {
			values[c] = map[string][]float64{}
		}
		for name, v := range s.Metrics {
			values[c][name] = append(values[c][name], v)
		}
	}
	for c, byMetric := range values {
		metric := catalog.Primary(byMetric)
		if metric == "" {
			continue
		}
		cells++
		s := report.SummarizeMetric(metric, byMetric[metric])
		// A constant figure (all values equal, even zero) is as precise as it gets.
		met := s.N >= 2 && (s.CIHigh-s.CILow <= 0 || s.RelCI <= target)
		if !met {
			misses = append(misses, Miss{Target: c.Target, Path: c.Path, Workload: c.Workload, Pairs: c.Pairs, Metric: metric, RelCI: s.RelCI, N: s.N})
		}
	}
	sort.Slice(misses, func(i, j int) bool {
		a, b := misses[i], misses[j]
		return fmt.Sprint(a.Workload, a.Pairs, a.Path, a.Target) < fmt.Sprint(b.Workload, b.Pairs, b.Path, b.Target)
	})
	return misses, cells
}

// extraRound lays out one more round over the cells of the groups that miss the target,
// shuffled like every round, numbered from seq.
func extraRound(s suite.Suite, misses []Miss, round, seq int) []Step {
	want := map[group]bool{}
	for _, m := range misses {
		want[group{m.Path, m.Workload, max(m.Pairs, 1)}] = true
	}
	var cells []suite.Combo
	for _, c := range s.Matrix() {
		if want[group{c.Path, c.Workload.Engine(s.Duration.Duration).ID(), max(c.Pairs, 1)}] {
			cells = append(cells, c)
		}
	}
	rng := rand.New(rand.NewPCG(uint64(s.Seed), uint64(round)))
	var steps []Step
	for _, c := range shuffle(cells, rng, s.PerRound()) {
		seq++
		steps = append(steps, Step{Seq: seq, Round: round, Combo: c, Duration: s.Duration.Duration})
	}
	markBlocks(steps, s.PerRound())
	return steps
}

// adapt adds rounds after the scheduled ones until every headline figure meets the suite's
// precision or the next round would overrun its budget, then says which figures missed.
func (r *run) adapt(ctx context.Context, byName map[string]*target, res *Result) error {
	s := r.opts.Suite
	target, budget := float64(s.Precision), s.Budget.Duration
	round := s.Repetitions
	for {
		misses, cells := Precision(res.Samples, target)
		if len(misses) == 0 {
			r.progress("precision: all %d headline figures within ±%.3g %% after %d rounds", cells, target*100, round)
			return nil
		}
		steps := extraRound(s, misses, round+1, r.seq)
		left := budget - time.Since(r.began)
		if est := Estimate(steps); est > left {
			r.reportMisses(misses, cells, target, round, fmt.Sprintf("the next round (%s) would overrun the %s budget", est.Round(time.Second), budget))
			return nil
		}
		round++
		r.progress("precision: %d of %d headline figures above ±%.3g %%: round %d over %d samples", len(misses), cells, target*100, round, len(steps))
		// Reserved before the round, whose setup samples (pods per round) number after them.
		r.seq += len(steps)
		if err := r.loop(ctx, steps, byName, res); err != nil {
			return err
		}
	}
}

// reportMisses says which figures the run could not make precise enough, and why it stopped.
func (r *run) reportMisses(misses []Miss, cells int, target float64, rounds int, why string) {
	r.progress("precision: %d of %d headline figures still above ±%.3g %% after %d rounds: %s", len(misses), cells, target*100, rounds, why)
	for _, m := range misses {
		reached := "no interval"
		if !math.IsNaN(m.RelCI) {
			reached = fmt.Sprintf("±%.3g %%", m.RelCI*100)
		}
		label := store.Cell{Workload: m.Workload, Pairs: m.Pairs}.WorkloadLabel()
		r.progress("  %s %s %s %s: %s (n=%d)", m.Target, m.Path, label, m.Metric, reached, m.N)
	}
}

// roundLabel is how a progress line names a step's round.
func roundLabel(st Step, repetitions int) string {
	switch {
	case st.Warmup():
		return "warm-up"
	case st.Round > repetitions:
		return fmt.Sprintf("round %d+", st.Round)
	}
	return fmt.Sprintf("round %d/%d", st.Round, repetitions)
}
