package analysis

import (
	"cmp"
	"slices"
	"strings"

	"github.com/cnibench/cnibench/internal/profile"
	"github.com/cnibench/cnibench/internal/record"
)

// profileTop is how many functions a profile cell lists, and profileDeltas how many
// differences: host-wide sampling puts other processes' noise among them (a runtime shim's
// share moving by 8 points between two datapaths' samples), so the list goes past it.
const (
	profileTop    = 6
	profileDeltas = 10
)

// ProfileCell is where the host's CPU time went during one cell's measured samples, merged
// over them, and how that differs from the first target of the same path and workload.
type ProfileCell struct {
	record.Cell
	// Profiled is how many of the cell's samples carry a profile; Missing says why the others
	// do not (the first reason met), empty when none is missing.
	Profiled int    `json:"profiled"`
	Missing  string `json:"missing,omitempty"`
	Summary  profile.Summary
	Folded   profile.Folded
	// Versus is the target this cell is compared with, empty for the first target of its
	// path and workload; Deltas are the functions whose share differs most.
	Versus string
	Deltas []profile.Delta
}

// Top is the functions the cell's CPUs spent the most samples in, themselves (not in their
// callees).
func (c ProfileCell) Top() []profile.Func { return c.Summary.TopSelf(profileTop) }

// Profiles merges the CPU profiles of each cell's measured samples (not warm-up, not failed)
// and sets each target beside the first target, in the order of targets, of the same path,
// workload and pairs. Cells without any profiled sample are left out.
func Profiles(targets []string, samples []record.Sample) []ProfileCell {
	byCell := map[record.Cell]*ProfileCell{}
	for _, s := range samples {
		if s.Warmup || s.Error != "" || s.Profile == "" {
			continue
		}
		c := byCell[s.Cell()]
		if c == nil {
			c = &ProfileCell{Cell: s.Cell(), Folded: profile.Folded{}}
			byCell[s.Cell()] = c
		}
		f, err := profile.Parse(s.Profile)
		if err != nil || f.Total() == 0 {
			if c.Missing == "" {
				c.Missing = missingReason(s.Profile, err)
			}
			continue
		}
		c.Profiled++
		c.Folded.Add(f)
	}
	order := func(name string) int {
		if i := slices.Index(targets, name); i >= 0 {
			return i
		}
		return len(targets)
	}
	out := make([]ProfileCell, 0, len(byCell))
	for _, c := range byCell {
		c.Summary = profile.Summarize(c.Folded)
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b ProfileCell) int {
		return cmp.Or(cmp.Compare(PathRank(a.Path), PathRank(b.Path)), strings.Compare(a.Path, b.Path),
			strings.Compare(a.Workload, b.Workload), cmp.Compare(a.Pairs, b.Pairs),
			cmp.Compare(order(a.Target), order(b.Target)), strings.Compare(a.Target, b.Target))
	})
	for i := range out {
		first := firstOfGroup(out, i)
		if first != i && out[first].Summary.Busy > 0 && out[i].Summary.Busy > 0 {
			out[i].Versus = out[first].Target
			out[i].Deltas = profile.Diff(out[first].Folded, out[i].Folded, profileDeltas)
		}
	}
	return out
}

// firstOfGroup is the index of the first cell of cells[i]'s path, workload and pairs.
func firstOfGroup(cells []ProfileCell, i int) int {
	for i > 0 {
		a, b := cells[i-1], cells[i]
		if a.Path != b.Path || a.Workload != b.Workload || a.Pairs != b.Pairs {
			break
		}
		i--
	}
	return i
}

// missingReason is what a sample's profile says of why it holds no stacks.
func missingReason(text string, err error) string {
	if err != nil {
		return err.Error()
	}
	for _, line := range strings.Split(text, "\n") {
		if r, ok := strings.CutPrefix(line, "# not recorded: "); ok {
			return r
		}
	}
	return "no samples"
}
