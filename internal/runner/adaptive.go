package runner

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/analysis"
	"github.com/cnibench/cnibench/internal/catalog"
	"github.com/cnibench/cnibench/internal/record"
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
	// Untestable says the figure's comparison in the verdict cannot reach significance at
	// its samples, however precise they are.
	Untestable bool
	// Undecided says the figure's comparison with Against is neither different at DecisiveP
	// nor within the suite's margin: its ratio Ratio, 95 % interval [RatioLow, RatioHigh].
	Undecided                  bool
	Against                    string
	Ratio, RatioLow, RatioHigh float64
	// Points marks a figure compared on the difference scale (UDP loss): the comparison is
	// Diff, 95 % interval [DiffLow, DiffHigh], in the metric's unit, and Ratio is not used.
	Points                  bool
	Diff, DiffLow, DiffHigh float64
	// Confirming marks a group that met the target on fewer than confirmRounds checks in a
	// row: not a miss to report, a round to make.
	Confirming bool
}

// confirmRounds is how many consecutive checks a group must meet the precision target on
// before it stops getting rounds: stopping the first time a lucky streak of samples looks
// precise made the interval cover 0.90 at CV 10 % and half the time with a tenth of the
// samples slow (TestStoppingRuleCoverage).
const confirmRounds = 2

// untestableMisses lists the cells whose comparison in the verdict is untestable at their
// samples (3 rounds against 3 cannot reach p < 0.05): no cell stops below the n its
// comparison needs. A line comparing one target's paths names the path in Path.
func untestableMisses(lines []analysis.VerdictLine) []Miss {
	var out []Miss
	for _, l := range lines {
		// Setup figures come with the rounds of the measured cells; no round adds them alone.
		if l.Path == SetupPath || !slices.ContainsFunc(l.Entries, func(e analysis.Ranked) bool { return e.Verdict == analysis.Untestable }) {
			continue
		}
		for _, e := range l.Entries {
			if l.Path == "" && e.Target == SetupPath {
				continue
			}
			m := missOf(l, e)
			m.Untestable = true
			out = append(out, m)
		}
	}
	return out
}

// missOf is entry e of verdict line l as a miss. A line comparing one target's paths (no
// Path) names the entry's path in Path and no target.
func missOf(l analysis.VerdictLine, e analysis.Ranked) Miss {
	m := Miss{Target: e.Target, Path: l.Path, Workload: l.Workload, Pairs: l.Pairs, Metric: l.Metric, RelCI: e.Summary.RelCI, N: e.Summary.N}
	if l.Path == "" {
		m.Target, m.Path = "", e.Target
	}
	return m
}

// Precision checks the headline figure of every measured cell (the first of
// catalog.ProgressOrder it has) against target, a fraction of the mean: warm-up, failed
// and flagged samples do not count. It returns the cells that miss it and how many cells
// there are.
func Precision(samples []record.Sample, target float64) (misses []Miss, cells int) {
	values := map[record.Cell]map[string][]float64{}
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
		s := analysis.SummarizeMetric(metric, byMetric[metric])
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
		steps = append(steps, Step{Seq: seq, Round: round, Combo: c, Duration: c.Workload.SampleDuration(s)})
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
	held := map[group]int{} // consecutive checks each group met the target on
	for {
		misses, cells := check(res.Samples, target, float64(s.Margin), held)
		if len(misses) == 0 {
			r.progress("precision: all %d headline figures within ±%.3g %% after %d rounds (held %d checks running), every comparison decided (different at p < %g or within the margin: ±%.3g %% for a ratio, in points for UDP loss)",
				cells, target*100, round, confirmRounds, DecisiveP, float64(s.Margin)*100)
			return nil
		}
		steps := extraRound(s, misses, round+1, r.seq)
		if len(steps) == 0 {
			r.reportMisses(misses, cells, target, round, "no measured cell of theirs can take another round")
			return nil
		}
		left := budget - time.Since(r.began)
		if est := Estimate(steps); est > left {
			r.reportMisses(misses, cells, target, round, fmt.Sprintf("the next round (%s) would overrun the %s budget", est.Round(time.Second), budget))
			return nil
		}
		round++
		r.progress("precision: %d of %d headline figures above ±%.3g %%, undecided or not yet confirmed: round %d over %d samples", counted(misses), cells, target*100, round, len(steps))
		// Reserved before the round, whose setup samples (pods per round) number after them.
		r.seq += len(steps)
		if err := r.loop(ctx, steps, byName, res); err != nil {
			return err
		}
	}
}

// check is the precision loop's test after a round: the figures wider than target, the
// comparisons untestable or undecided at margin, and the groups that met all of it on fewer
// than confirmRounds checks in a row (held counts them between checks). No miss: stop.
func check(samples []record.Sample, target, margin float64, held map[group]int) (misses []Miss, cells int) {
	misses, cells = Precision(samples, target)
	lines := analysis.Verdict(samples)
	misses = append(misses, untestableMisses(lines)...)
	misses = append(misses, undecidedMisses(lines, margin)...)
	return unconfirmed(misses, samples, held), cells
}

// unconfirmed counts, for every measured group, the consecutive checks it met the target on,
// and returns the misses plus a confirming miss for each group that met it on fewer than
// confirmRounds checks in a row.
func unconfirmed(misses []Miss, samples []record.Sample, held map[group]int) []Miss {
	missed := map[group]bool{}
	for _, m := range misses {
		missed[group{m.Path, m.Workload, max(m.Pairs, 1)}] = true
	}
	seen := map[group]bool{}
	for _, smp := range samples {
		g := group{smp.Path, smp.Workload, max(smp.Cell().Pairs, 1)}
		if smp.Warmup || smp.Path == SetupPath || seen[g] {
			continue
		}
		seen[g] = true
		if missed[g] {
			held[g] = 0
			continue
		}
		if held[g]++; held[g] < confirmRounds {
			misses = append(misses, Miss{Path: g.Path, Workload: g.Workload, Pairs: g.Pairs, RelCI: math.NaN(), Confirming: true})
		}
	}
	return misses
}

// counted is the number of figures that miss, not counting those only awaiting confirmation:
// a figure both too wide and untestable is one figure (an untestable comparison of one
// target's paths names no target).
func counted(misses []Miss) int {
	type cell struct {
		path, workload string
		pairs          int
	}
	targets := map[cell]map[string]bool{}
	for _, m := range misses {
		if m.Confirming {
			continue
		}
		c := cell{m.Path, m.Workload, max(m.Pairs, 1)}
		if targets[c] == nil {
			targets[c] = map[string]bool{}
		}
		targets[c][m.Target] = true
	}
	n := 0
	for _, ts := range targets {
		n += len(ts)
		if ts[""] && len(ts) > 1 {
			n--
		}
	}
	return n
}

// reportMisses says which figures the run could not make precise enough, and why it stopped.
func (r *run) reportMisses(misses []Miss, cells int, target float64, rounds int, why string) {
	r.progress("precision: %d of %d headline figures still above ±%.3g %%, untestable or undecided after %d rounds: %s", counted(misses), cells, target*100, rounds, why)
	for _, m := range misses {
		reached := "no interval"
		switch {
		case m.Confirming:
			continue
		case m.Untestable:
			reached = "its comparison untestable at these samples"
		case m.Undecided && m.Points:
			reached = fmt.Sprintf("against %s %+.3g pp [%.3g, %.3g]: neither different at p < %g nor within the margin", m.Against, m.Diff, m.DiffLow, m.DiffHigh, DecisiveP)
		case m.Undecided:
			reached = fmt.Sprintf("against %s x%.3g [%.3g, %.3g]: neither different at p < %g nor within the margin", m.Against, m.Ratio, m.RatioLow, m.RatioHigh, DecisiveP)
		case !math.IsNaN(m.RelCI):
			reached = fmt.Sprintf("±%.3g %%", m.RelCI*100)
		}
		label := record.Cell{Workload: m.Workload, Pairs: m.Pairs}.WorkloadLabel()
		// A comparison of one target's paths names no target.
		r.progress("  %s %s %s: %s (n=%d)", strings.TrimSpace(m.Target+" "+m.Path), label, m.Metric, reached, m.N)
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
