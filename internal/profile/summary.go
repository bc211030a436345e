package profile

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"strings"
)

// idleFrames mark a sample of a CPU with nothing to run: the idle loop's own frames, which
// every kernel version names alike.
var idleFrames = []string{"do_idle" + KernelSuffix, "cpu_startup_entry" + KernelSuffix, "cpuidle_enter" + KernelSuffix}

// Idle reports whether a folded stack is the idle loop's.
func Idle(stack string) bool {
	for _, f := range idleFrames {
		if strings.Contains(stack, ";"+f) {
			return true
		}
	}
	return false
}

// Func is one function's share of a profile's busy samples.
type Func struct {
	Name   string  // as in the folded stacks, kernel functions with KernelSuffix
	Kernel bool    // a kernel function
	Self   float64 // share of busy samples whose leaf it is, 0..1
	Total  float64 // share of busy samples with it anywhere on the stack, 0..1
}

// Summary is what a report shows of a profile.
type Summary struct {
	Samples int     // every sample, idle included
	Busy    int     // samples of a CPU running something
	Kernel  float64 // share of busy samples whose leaf is a kernel function, 0..1
	Funcs   []Func  // every function of the busy samples, largest Total first
}

// Summarize counts each function's self and total share of the busy samples. The command
// name at the root of each stack is not a function and is left out.
func Summarize(f Folded) Summary {
	s := Summary{Samples: f.Total()}
	self, total := map[string]int{}, map[string]int{}
	kernel := 0
	for stack, n := range f {
		if Idle(stack) {
			continue
		}
		s.Busy += n
		frames := strings.Split(stack, ";")[1:]
		if len(frames) == 0 {
			continue
		}
		leaf := frames[len(frames)-1]
		self[leaf] += n
		if strings.HasSuffix(leaf, KernelSuffix) {
			kernel += n
		}
		seen := map[string]bool{}
		for _, fr := range frames {
			if !seen[fr] {
				seen[fr] = true
				total[fr] += n
			}
		}
	}
	if s.Busy == 0 {
		return s
	}
	busy := float64(s.Busy)
	s.Kernel = float64(kernel) / busy
	for name, n := range total {
		s.Funcs = append(s.Funcs, Func{Name: name, Kernel: strings.HasSuffix(name, KernelSuffix),
			Self: float64(self[name]) / busy, Total: float64(n) / busy})
	}
	slices.SortFunc(s.Funcs, func(a, b Func) int {
		return cmp.Or(cmp.Compare(b.Total, a.Total), cmp.Compare(b.Self, a.Self), strings.Compare(a.Name, b.Name))
	})
	return s
}

// TopSelf returns the n functions with the largest self share: where the CPU time is spent,
// as opposed to the callers it is spent under.
func (s Summary) TopSelf(n int) []Func {
	out := slices.Clone(s.Funcs)
	slices.SortStableFunc(out, func(a, b Func) int { return cmp.Compare(b.Self, a.Self) })
	return out[:min(n, len(out))]
}

// Delta is how much larger a function's total share is in one profile than in another, in
// percentage points of their busy samples.
type Delta struct {
	Name     string
	Kernel   bool
	A, B     float64 // total shares, 0..1
	PointsBA float64 // (B - A) * 100
	// Chain is how many functions ranked below this one were left out as the same call
	// chain: on the stack with it in (nearly) every busy sample of both profiles.
	Chain int
}

// sameChain is how much two functions' busy samples must overlap, on each side, for the
// lower-ranked to be left out as the same call chain: a receive path's read, sock_read_iter,
// sock_recvmsg and tcp_recvmsg move together and would otherwise fill a list of differences.
const sameChain = 0.95

// Diff lists the n functions that tell b's profile from a's best, each function once and each
// call chain once. A function's difference in total share counts in full when it is on one
// side only and less the more both sides share it (weighted by 1 - smaller/larger share): an
// encapsulation's own transmit and receive functions, absent from a routed path, rank above
// the generic transmit frames whose share they raise on the way (on flannel-vxlan against
// bridge here: vxlan_xmit 0 to 6.9 %, ranked before ip_output 26.6 to 39.5 %). A function
// found with a higher-ranked one in at least 95 % of the busy samples holding either, in each
// profile, is that one's chain and is counted in its Chain instead of listed: on 2026-12-08
// the ten largest differences of flannel-vxlan from bridge were the frames of one receive
// path, and vxlan_xmit was not among them.
func Diff(a, b Folded, n int) []Delta {
	sa, sb := Summarize(a), Summarize(b)
	shares := map[string][2]float64{}
	for _, f := range sa.Funcs {
		v := shares[f.Name]
		v[0] = f.Total
		shares[f.Name] = v
	}
	for _, f := range sb.Funcs {
		v := shares[f.Name]
		v[1] = f.Total
		shares[f.Name] = v
	}
	all := make([]Delta, 0, len(shares))
	for name, v := range shares {
		all = append(all, Delta{Name: name, Kernel: strings.HasSuffix(name, KernelSuffix), A: v[0], B: v[1], PointsBA: (v[1] - v[0]) * 100})
	}
	slices.SortFunc(all, func(x, y Delta) int {
		return cmp.Or(cmp.Compare(y.distinction(), x.distinction()), strings.Compare(x.Name, y.Name))
	})
	ia, ib := indexStacks(a), indexStacks(b)
	var out []Delta
	for _, d := range all {
		if len(out) == n {
			break
		}
		if i := slices.IndexFunc(out, func(o Delta) bool {
			return ia.together(o.Name, d.Name) >= sameChain && ib.together(o.Name, d.Name) >= sameChain
		}); i >= 0 {
			out[i].Chain++
			continue
		}
		out = append(out, d)
	}
	return out
}

// stackIndex lists, for each function, the busy stacks of a profile it is on.
type stackIndex struct {
	count []int            // samples of each busy stack
	on    map[string][]int // function -> indexes of its stacks, ascending
}

// indexStacks indexes f's busy stacks (the idle loop's left out, as Summarize does).
func indexStacks(f Folded) stackIndex {
	ix := stackIndex{on: map[string][]int{}}
	for _, stack := range slices.Sorted(maps.Keys(f)) {
		if Idle(stack) {
			continue
		}
		i := len(ix.count)
		ix.count = append(ix.count, f[stack])
		frames := strings.Split(stack, ";")[1:]
		for j, fr := range frames {
			if !slices.Contains(frames[:j], fr) {
				ix.on[fr] = append(ix.on[fr], i)
			}
		}
	}
	return ix
}

// together is the share of the busy samples holding x or y that hold both; 1 when neither is
// in the profile, which then says nothing against their being one chain.
func (ix stackIndex) together(x, y string) float64 {
	xs, ys := ix.on[x], ix.on[y]
	both, either := 0, 0
	i, j := 0, 0
	for i < len(xs) || j < len(ys) {
		switch {
		case j == len(ys) || (i < len(xs) && xs[i] < ys[j]):
			either += ix.count[xs[i]]
			i++
		case i == len(xs) || ys[j] < xs[i]:
			either += ix.count[ys[j]]
			j++
		default:
			both += ix.count[xs[i]]
			either += ix.count[xs[i]]
			i, j = i+1, j+1
		}
	}
	if either == 0 {
		return 1
	}
	return float64(both) / float64(either)
}

// distinction is how much a difference tells two profiles apart: its size, weighted by how
// little the two sides share the function.
func (d Delta) distinction() float64 {
	lo, hi := min(d.A, d.B), max(d.A, d.B)
	if hi == 0 {
		return 0
	}
	return math.Abs(d.PointsBA) * (1 - lo/hi)
}

// Display is a function's name as a reader expects it: without KernelSuffix, which the
// Kernel field carries.
func Display(name string) string { return strings.TrimSuffix(name, KernelSuffix) }
