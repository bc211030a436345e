package report

import (
	"fmt"
	"html/template"
	"io"
	"strings"

	"github.com/cnibench/cnibench/internal/analysis"
	"github.com/cnibench/cnibench/internal/profile"
)

// profileLegend says what the profile lines count, once above them.
const profileLegend = "share of the busy CPU samples of the whole host during the measured windows (perf, %d Hz a CPU); " +
	"self: the function itself; vs: difference in samples with the function on the stack, in percentage points"

// writeProfiles prints, per profiled cell, where the CPU time went and, for each target after
// the first of its path and workload, the functions whose share differs most.
func writeProfiles(w io.Writer, cells []analysis.ProfileCell, detail bool) {
	if len(cells) == 0 {
		return
	}
	fmt.Fprintf(w, "\nwhere the CPU goes: "+profileLegend+"\n", profile.Frequency)
	group := ""
	for _, c := range cells {
		if g := c.Path + " " + c.WorkloadLabel(); g != group {
			group = g
			fmt.Fprintf(w, "  %s\n", g)
		}
		fmt.Fprintf(w, "    %-14s %s\n", c.Target, profileLine(c, detail))
	}
}

// profileLine is one cell's line: its samples, the kernel's share, then the differences from
// the first target or, for the first target (or with detail), its top functions.
func profileLine(c analysis.ProfileCell, detail bool) string {
	if c.Summary.Busy == 0 {
		return "no profile: " + c.Missing
	}
	var parts []string
	head := fmt.Sprintf("%d busy samples (n=%d), %.0f %% kernel", c.Summary.Busy, c.Profiled, 100*c.Summary.Kernel)
	if c.Versus != "" {
		parts = append(parts, "vs "+c.Versus+": "+deltaList(c.Deltas, 4))
	}
	if c.Versus == "" || detail {
		parts = append(parts, "self: "+funcList(c.Top(), 4))
	}
	if c.Missing != "" {
		parts = append(parts, "some samples without a profile: "+c.Missing)
	}
	return head + "; " + strings.Join(parts, "; ")
}

func funcList(fs []profile.Func, n int) string {
	var out []string
	for _, f := range fs[:min(n, len(fs))] {
		out = append(out, fmt.Sprintf("%s %.1f %%", funcName(f.Name), 100*f.Self))
	}
	return strings.Join(out, ", ")
}

func deltaList(ds []profile.Delta, n int) string {
	var out []string
	for _, d := range ds[:min(n, len(ds))] {
		line := fmt.Sprintf("%+.1f pp %s", d.PointsBA, funcName(d.Name))
		if d.Chain > 0 {
			// The frames left out move with this one: a reader looking for them finds them
			// in the flame graph.
			line += fmt.Sprintf(" (and %d of its call chain)", d.Chain)
		}
		out = append(out, line)
	}
	return strings.Join(out, ", ")
}

// funcName marks kernel functions with [k], as perf report does.
func funcName(name string) string {
	if strings.HasSuffix(name, profile.KernelSuffix) {
		return profile.Display(name) + " [k]"
	}
	return name
}

// profilesJSON is the profiles' machine form: the summaries, not the stacks (`cnibench results
// flamegraph` writes those).
func profilesJSON(cells []analysis.ProfileCell) []map[string]any {
	out := make([]map[string]any, 0, len(cells))
	for _, c := range cells {
		m := map[string]any{"target": c.Target, "path": c.Path, "workload": c.Workload, "pairs": c.Pairs,
			"profiled": c.Profiled, "samples": c.Summary.Samples, "busy": c.Summary.Busy, "kernel_share": c.Summary.Kernel}
		if c.Missing != "" {
			m["missing"] = c.Missing
		}
		var top []map[string]any
		for _, f := range c.Top() {
			top = append(top, map[string]any{"function": profile.Display(f.Name), "kernel": f.Kernel, "self_share": f.Self, "total_share": f.Total})
		}
		m["top"] = top
		if c.Versus != "" {
			var ds []map[string]any
			for _, d := range c.Deltas {
				ds = append(ds, map[string]any{"function": profile.Display(d.Name), "kernel": d.Kernel,
					"share_versus": d.A, "share": d.B, "points": d.PointsBA, "chain": d.Chain})
			}
			m["versus"] = map[string]any{"target": c.Versus, "deltas": ds}
		}
		out = append(out, m)
	}
	return out
}

// htmlProfile is a profiled cell in the HTML report: its line and its flame graph.
type htmlProfile struct {
	Title, Line string
	SVG         template.HTML
}

// htmlProfiles draws a flame graph per profiled cell.
func htmlProfiles(run string, cells []analysis.ProfileCell) []htmlProfile {
	var out []htmlProfile
	for _, c := range cells {
		title := fmt.Sprintf("%s%s, %s %s", run, c.Target, c.Path, c.WorkloadLabel())
		var svg strings.Builder
		if err := WriteFlameGraph(&svg, c.Folded, title); err != nil {
			continue
		}
		// The SVG is built from escaped text only (WriteFlameGraph escapes every name).
		out = append(out, htmlProfile{Title: title, Line: profileLine(c, true), SVG: template.HTML(svg.String())}) //nolint:gosec
	}
	return out
}

// writeProfilesMarkdown lists each profiled cell's line in a table.
func writeProfilesMarkdown(w io.Writer, cells []analysis.ProfileCell) {
	if len(cells) == 0 {
		return
	}
	fmt.Fprintf(w, "## Where the CPU goes\n\n"+strings.ToUpper(profileLegend[:1])+profileLegend[1:]+".\n\n", profile.Frequency)
	mdTable(w, []string{"Path", "Workload", "Target", "Profile"}, func(add func(...string)) {
		for _, c := range cells {
			add(c.Path, c.WorkloadLabel(), c.Target, profileLine(c, true))
		}
	})
}

// FlameGraphOptions picks the profiled cell of a run whose flame graph to draw.
type FlameGraphOptions struct {
	Target, Path, Workload string // workload as stored, e.g. "tcp-stream/1"
	Pairs                  int    // 0 is 1
	Folded                 bool   // write the folded stacks instead of an SVG
}

// FlameGraphCell names a cell as a flame graph picks it.
type FlameGraphCell struct {
	Target, Path, Workload string
	Pairs                  int
}

// NoProfileError is a flame graph asked of a cell that the run has no profile of. Have lists
// the cells it has profiles of; none when the run recorded no profiles. The command line names
// the cells by its flags.
type NoProfileError struct {
	Run  string
	Want FlameGraphCell
	Have []FlameGraphCell
}

func (e *NoProfileError) Error() string {
	if len(e.Have) == 0 {
		return fmt.Sprintf("run %s has no CPU profiles (the suite's profile: true records them)", e.Run)
	}
	cell := func(c FlameGraphCell) string {
		return fmt.Sprintf("target %q, path %q, workload %q, pairs %d", c.Target, c.Path, c.Workload, c.Pairs)
	}
	have := make([]string, len(e.Have))
	for i, c := range e.Have {
		have[i] = cell(c)
	}
	return fmt.Sprintf("run %s has no profile of %s; it has:\n  %s", e.Run, cell(e.Want), strings.Join(have, "\n  "))
}

// WriteFlameGraphOf writes the merged profile of one cell of a run's samples, as an SVG flame
// graph or as folded stacks for other tools. When none matches, the error is a
// *NoProfileError naming the cells that have profiles.
func WriteFlameGraphOf(w io.Writer, d Document, o FlameGraphOptions) error {
	want := FlameGraphCell{Target: o.Target, Path: o.Path, Workload: o.Workload, Pairs: max(o.Pairs, 1)}
	var have []FlameGraphCell
	for _, c := range d.Profiles {
		if c.Target == want.Target && c.Path == want.Path && c.Workload == want.Workload && c.Pairs == want.Pairs {
			if c.Folded.Total() == 0 {
				return fmt.Errorf("%s %s %s: no profile: %s", c.Target, c.Path, c.WorkloadLabel(), c.Missing)
			}
			if o.Folded {
				_, err := io.WriteString(w, c.Folded.String())
				return err
			}
			return WriteFlameGraph(w, c.Folded, fmt.Sprintf("run %s: %s, %s %s", d.Run.ID, c.Target, c.Path, c.WorkloadLabel()))
		}
		have = append(have, FlameGraphCell{Target: c.Target, Path: c.Path, Workload: c.Workload, Pairs: c.Pairs})
	}
	return &NoProfileError{Run: d.Run.ID, Want: want, Have: have}
}
