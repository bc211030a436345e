package runner

import (
	"fmt"
	"testing"

	"github.com/cnibench/cnibench/internal/suite"
)

// roundSuite is a runtime-study-like suite: two targets, four pairs levels, three workloads.
func roundSuite(pods string) suite.Suite {
	s := suite.Default()
	s.Targets = []suite.Target{{Name: "a", Local: &suite.Local{}}, {Name: "b", Local: &suite.Local{}}}
	s.Paths = []string{suite.CrossNode}
	s.Workloads = []suite.Workload{{Kind: "tcp-stream"}, {Kind: "tcp-rr"}, {Kind: "cpu"}}
	s.Pairs = []int{1, 10, 20, 40}
	s.Repetitions = 4
	s.Pods = pods
	return s
}

// blocks lists the (target, pairs) blocks of each round in the order the steps visit them, a
// block counted again whenever the steps come back to it.
func blocks(steps []Step) map[int][]string {
	out := map[int][]string{}
	last := ""
	for _, st := range steps {
		b := fmt.Sprintf("%s x%d", st.Combo.Target, st.Combo.Pairs)
		if b != last || len(out[st.Round]) == 0 {
			out[st.Round] = append(out[st.Round], b)
		}
		last = b
	}
	return out
}

func TestPodsPerRoundVisitEachBlockOnceARound(t *testing.T) {
	s := roundSuite(suite.PodsRound)
	steps := Schedule(s, 7)
	perBlock := len(s.Paths) * len(s.Workloads) // tcp-stream and tcp-rr on the path, cpu in the pod
	orders := map[string]bool{}
	for round, bs := range blocks(steps) {
		if len(bs) != len(s.Targets)*len(s.Pairs) {
			t.Errorf("round %d visits %d blocks, want %d (each once): %v", round, len(bs), len(s.Targets)*len(s.Pairs), bs)
		}
		orders[fmt.Sprint(bs)] = true
	}
	if len(orders) < 2 {
		t.Error("every round visits the blocks in the same order: blocks are not shuffled")
	}
	if len(steps) != (s.Repetitions+1)*len(s.Targets)*len(s.Pairs)*perBlock {
		t.Errorf("%d steps, want every cell once a round", len(steps))
	}
	starts := 0
	for _, st := range steps {
		if st.NewBlock {
			starts++
		}
	}
	if want := (s.Repetitions + 1) * len(s.Targets) * len(s.Pairs); starts != want {
		t.Errorf("%d steps start a block, want %d", starts, want)
	}
	if Estimate(steps) <= Estimate(Schedule(roundSuite(suite.PodsRun), 7)) {
		t.Error("the estimate leaves out bringing the blocks' pods up")
	}
	// The same suite with pods for the whole run interleaves cells freely.
	free := blocks(Schedule(roundSuite(suite.PodsRun), 7))
	if len(free[1]) <= len(s.Targets)*len(s.Pairs) {
		t.Errorf("pods per run: round 1 runs blocks of cells together (%d runs), expected them mixed", len(free[1]))
	}
}

func TestExtraRoundsKeepBlocksTogether(t *testing.T) {
	s := roundSuite(suite.PodsRound)
	id := func(i int) string { return s.Workloads[i].Engine(s.Duration.Duration).ID() }
	misses := []Miss{{Path: suite.CrossNode, Workload: id(0), Pairs: 10}, {Path: suite.CrossNode, Workload: id(1), Pairs: 10},
		{Path: suite.InPod, Workload: id(2), Pairs: 40}}
	steps := extraRound(s, misses, 5, 100)
	if bs := blocks(steps)[5]; len(bs) != 4 {
		t.Errorf("an extra round over 2 targets x 2 levels visits blocks %v, want each of 4 once", bs)
	}
	if steps[0].Seq != 101 || steps[len(steps)-1].Seq != 100+len(steps) {
		t.Errorf("extra steps numbered %d..%d, want from 101", steps[0].Seq, steps[len(steps)-1].Seq)
	}
}
