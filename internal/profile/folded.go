// Package profile records where a sample's CPU time goes: the host's CPUs sampled by perf
// during the measured window, the stacks folded (one line per distinct stack, root first, with
// its count), and what a report needs of them: the functions with the largest share of the
// busy samples, the difference between two configurations, and a flame graph.
//
// Folded stacks are the format of Brendan Gregg's FlameGraph tools: "comm;f1;f2;leaf count".
// Kernel frames carry the suffix "_[k]", as stackcollapse-perf --kernel writes them, so a
// reader tells vxlan_xmit_[k] from a user function at a glance.
package profile

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// KernelSuffix marks a kernel frame in a folded stack.
const KernelSuffix = "_[k]"

// Folded maps a stack (frames root first, joined by ";", the command name first) to how many
// samples ended in it.
type Folded map[string]int

// Total is the number of samples.
func (f Folded) Total() int {
	n := 0
	for _, c := range f {
		n += c
	}
	return n
}

// Add adds every stack of g to f.
func (f Folded) Add(g Folded) {
	for s, c := range g {
		f[s] += c
	}
}

// String writes one "stack count" line per stack, sorted, as FlameGraph's tools read them.
func (f Folded) String() string {
	var b strings.Builder
	for _, s := range slices.Sorted(maps.Keys(f)) {
		fmt.Fprintf(&b, "%s %d\n", s, f[s])
	}
	return b.String()
}

// Parse reads folded stacks written by String (or by FlameGraph's stackcollapse tools).
// Lines starting with "#" are comments; a stack given twice adds up.
func Parse(text string) (Folded, error) {
	f := Folded{}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cut := strings.LastIndexByte(line, ' ')
		if cut <= 0 {
			return nil, fmt.Errorf("folded stacks line %d: %q: expected \"stack count\"", i+1, line)
		}
		n, err := strconv.Atoi(line[cut+1:])
		if err != nil || n < 0 {
			return nil, fmt.Errorf("folded stacks line %d: count %q: expected a whole number", i+1, line[cut+1:])
		}
		f[line[:cut]] += n
	}
	return f, nil
}

// FoldPerfScript folds the output of `perf script -F comm,pid,ip,sym,dso` for samples
// recorded with call graphs: a header line per sample (command, pid) followed by one line per
// frame, leaf first, and a blank line.
func FoldPerfScript(r io.Reader) (Folded, error) {
	f := Folded{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var comm string
	var frames []string
	flush := func() {
		if comm == "" {
			return
		}
		slices.Reverse(frames)
		f[strings.Join(append([]string{comm}, frames...), ";")]++
		comm, frames = "", frames[:0]
	}
	for sc.Scan() {
		line := sc.Text()
		switch trimmed := strings.TrimSpace(line); {
		case trimmed == "":
			flush()
		case isFrame(line, trimmed):
			// A stripped binary's frames all read "[binary]": a run of them says no more than
			// one, and would make a flame graph hundreds of rows tall.
			if name := frameName(trimmed); comm != "" && !(strings.HasPrefix(name, "[") && len(frames) > 0 && frames[len(frames)-1] == name) {
				frames = append(frames, name)
			}
		default:
			flush()
			comm = commName(trimmed)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read perf script output: %w", err)
	}
	flush()
	return f, nil
}

// isFrame tells a frame line (indented, an address first) from a sample's header line, whose
// command name may itself be indented when perf pads it.
func isFrame(line, trimmed string) bool {
	if line[0] != ' ' && line[0] != '\t' {
		return false
	}
	addr, _, ok := strings.Cut(trimmed, " ")
	if !ok {
		return false
	}
	_, err := strconv.ParseUint(addr, 16, 64)
	return err == nil
}

// commName is the command of a sample's header line ("iperf3 1234 " or "kworker/0:1 17 "):
// everything before the pid, whose spaces become underscores, and no ";" (the separator). A
// leading "#" becomes "_": folded stacks starting with one are comments (Parse).
func commName(line string) string {
	fields := strings.Fields(line)
	if len(fields) > 1 {
		if _, err := strconv.Atoi(fields[len(fields)-1]); err == nil {
			fields = fields[:len(fields)-1]
		}
	}
	name := clean(strings.Join(fields, "_"))
	if rest, ok := strings.CutPrefix(name, "#"); ok {
		name = "_" + rest
	}
	return name
}

// frameName turns "ffffffff8168da41 vxlan_xmit+0x41 ([kernel.kallsyms])" into
// "vxlan_xmit_[k]", and an unresolved user frame into the name of its binary in brackets.
func frameName(line string) string {
	addr, rest, _ := strings.Cut(line, " ")
	sym, dso := rest, ""
	if i := strings.LastIndex(rest, " ("); i >= 0 && strings.HasSuffix(rest, ")") {
		sym, dso = rest[:i], rest[i+2:len(rest)-1]
	}
	if j := strings.LastIndex(sym, "+0x"); j > 0 {
		sym = sym[:j]
	}
	// Kernel text, modules included (their dso is "[vxlan]"), lies in the top half of the
	// address space on amd64 and arm64.
	kernel := strings.HasPrefix(dso, "[kernel") || strings.HasSuffix(dso, ".ko") ||
		(len(addr) == 16 && strings.HasPrefix(addr, "ffff"))
	if sym == "" || sym == "[unknown]" {
		if kernel {
			return "[unknown]" + KernelSuffix
		}
		base := dso[strings.LastIndexByte(dso, '/')+1:]
		if base == "" || base == "unknown" {
			base = "unknown"
		}
		return "[" + clean(base) + "]"
	}
	if kernel {
		return clean(sym) + KernelSuffix
	}
	return clean(sym)
}

// clean keeps a name on one folded line: no separators, no spaces.
func clean(s string) string {
	return strings.NewReplacer(";", ":", " ", "_", "\t", "_").Replace(s)
}
