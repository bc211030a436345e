// Package runner executes a suite: it prepares each target (the local cluster or a remote one),
// deploys the client and server pods, and runs the samples interleaved, round by round in a
// freshly shuffled order, so that drift of a noisy machine hits every configuration alike.
// Every finished sample is stored at once; Ctrl-C leaves a partial run, never a half sample.
package runner

import (
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/suite"
)

// Step is one sample of the schedule.
type Step struct {
	Seq      int // position in the run, from 1
	Round    int // 0 is the warm-up round, whose samples are stored but not summarised
	Combo    suite.Combo
	Duration time.Duration
	// NewBlock marks, with pods per round, the first step of a target's pairs level in its
	// round: its pods are brought up before it.
	NewBlock bool
}

// Warmup reports whether the step's sample is discarded from summaries.
func (s Step) Warmup() bool { return s.Round == 0 }

// Schedule lays out the run: a warm-up round (unless the suite turns it off), then Repetitions
// rounds, each visiting every cell of the matrix once in an order shuffled afresh from seed.
func Schedule(s suite.Suite, seed int64) []Step {
	cells := s.Expand().Matrix()
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(seed)^0x9e3779b97f4a7c15))
	var steps []Step
	first := 0
	if s.Warmup.Off {
		first = 1
	}
	for round := first; round <= s.Repetitions; round++ {
		for _, c := range shuffle(cells, rng, s.PerRound()) {
			d := c.Workload.SampleDuration(s)
			if round == 0 {
				d = s.Warmup.Duration
			}
			steps = append(steps, Step{Seq: len(steps) + 1, Round: round, Combo: c, Duration: d})
		}
	}
	markBlocks(steps, s.PerRound())
	return steps
}

// markBlocks marks the steps that start a block, with pods per round.
func markBlocks(steps []Step, perRound bool) {
	for i := range steps {
		steps[i].NewBlock = perRound && (i == 0 || steps[i].Round != steps[i-1].Round ||
			blockOf(steps[i].Combo) != blockOf(steps[i-1].Combo))
	}
}

// block is the cells that share one target's pods at one pairs level.
type block struct {
	target string
	pairs  int
}

func blockOf(c suite.Combo) block { return block{c.Target, max(c.Pairs, 1)} }

// shuffle orders a round's cells at random. With pods per round, the cells of one target at
// one pairs level stay together, in random order, and so do the blocks: each block's pods are
// brought up once per round.
func shuffle(cells []suite.Combo, rng *rand.Rand, perRound bool) []suite.Combo {
	if !perRound {
		out := make([]suite.Combo, 0, len(cells))
		for _, i := range rng.Perm(len(cells)) {
			out = append(out, cells[i])
		}
		return out
	}
	var blocks []block
	members := map[block][]suite.Combo{}
	for _, c := range cells {
		b := blockOf(c)
		if members[b] == nil {
			blocks = append(blocks, b)
		}
		members[b] = append(members[b], c)
	}
	var out []suite.Combo
	for _, i := range rng.Perm(len(blocks)) {
		cs := members[blocks[i]]
		for _, j := range rng.Perm(len(cs)) {
			out = append(out, cs[j])
		}
	}
	return out
}

// perSampleOverhead is the time a sample costs beyond its measured duration (tool start,
// counters before and after, API round trips), measured on the local cluster.
const perSampleOverhead = 1500 * time.Millisecond

// perPairOverhead is what each further pair adds to a sample: its counters read twice and
// its client started, through a bounded number of concurrent execs. Measured on the 2-core
// machine over a round of the runtime study (runc, crun, gVisor and CRI-O mixed): 0.8 s per
// pair at 10 pairs, 0.7 s at 20 and 0.8 s at 40; retried samples come on top.
const perPairOverhead = 750 * time.Millisecond

// Bringing a block's pods up with pods per round: the burst of a pairs level's pods, the wait
// for the kubelets' first memory figures of them, and their removal. Set before the runtime
// study ran and close to what it measured on the 2-core machine (runc, crun, gVisor, CRI-O
// mixed, 64 blocks): bursts of 0.8 s at one pair to 18 s at forty, the memory wait 12.7 s,
// removals 7 s on average and 30 s at most (forty gVisor pairs).
const (
	perBlockOverhead   = 15 * time.Second
	perBlockPairUpDown = 600 * time.Millisecond
)

// Estimate is the expected wall time of a schedule, setup excluded.
func Estimate(steps []Step) time.Duration {
	var total time.Duration
	for _, s := range steps {
		pairs := max(s.Combo.Pairs, 1)
		total += s.Duration + perSampleOverhead + time.Duration(pairs-1)*perPairOverhead + releaseLead(pairs)
		if s.NewBlock {
			total += perBlockOverhead + time.Duration(pairs)*perBlockPairUpDown
		}
	}
	return total
}

// PrintPlan writes the schedule, one sample a line, and its estimated duration.
func PrintPlan(w io.Writer, steps []Step, seed int64) {
	fmt.Fprintf(w, "plan: %d samples, seed %d, estimated %s plus setup\n", len(steps), seed, Estimate(steps).Round(time.Second))
	width := 10
	for _, s := range steps {
		width = max(width, len(s.Combo.Target))
	}
	for _, s := range steps {
		kind := "measure"
		if s.Warmup() {
			kind = "warm-up"
		}
		if s.NewBlock {
			fmt.Fprintf(w, "      round %d  pods     %-*s x%d up (pods per round)\n", s.Round, width, s.Combo.Target, max(s.Combo.Pairs, 1))
		}
		ew := s.Combo.Workload.Engine(s.Duration)
		label := record.Cell{Workload: ew.ID(), Pairs: s.Combo.Pairs}.WorkloadLabel()
		fmt.Fprintf(w, "%4d  round %d  %-7s  %-*s %-15s %-26s %s\n", s.Seq, s.Round, kind, width, s.Combo.Target, s.Combo.Path, label, s.Duration)
	}
}
