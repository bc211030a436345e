package report

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/cnibench/cnibench/internal/catalog"
	"github.com/cnibench/cnibench/internal/store"
	"github.com/cnibench/cnibench/internal/suite"
)

// VerdictLine answers "which is better, by how much, how sure" for one workload: its
// headline metric for each compared thing, best first. With several targets the things are
// the targets on one path; with one target they are its paths, each against the
// host-network baseline.
type VerdictLine struct {
	Workload       string `json:"workload"`
	Pairs          int    `json:"pairs"`
	Path           string `json:"path,omitempty"` // empty when the entries are paths
	Metric         string `json:"metric"`
	Unit           string `json:"unit"`
	HigherIsBetter bool   `json:"higherIsBetter"`
	// Entries are ranked best first. Against is the entry every other is compared with:
	// the best target, or the host-network path.
	Entries []Ranked `json:"entries"`
	Against string   `json:"against"`
}

// untested is the verdict of an entry with too few samples for a test.
const untested = "untested"

// Verdict picks, for every cell, the workload's headline metric (the first of
// catalog.ProgressOrder it measured) and ranks what the run compared on it.
func Verdict(samples []store.Sample) []VerdictLine {
	type cell struct {
		workload string
		pairs    int
		path     string
	}
	values := map[cell]map[string]map[string][]float64{} // cell -> metric -> target -> values
	targets := map[string]bool{}
	for _, s := range samples {
		if s.Warmup || s.Error != "" {
			continue
		}
		targets[s.Target] = true
		c := cell{s.Workload, s.Cell().Pairs, s.Path}
		if values[c] == nil {
			values[c] = map[string]map[string][]float64{}
		}
		for name, v := range s.Metrics {
			if values[c][name] == nil {
				values[c][name] = map[string][]float64{}
			}
			values[c][name][s.Target] = append(values[c][name][s.Target], v)
		}
	}
	var lines []VerdictLine
	if len(targets) > 1 {
		for c, byMetric := range values {
			metric := headlineOf(byMetric)
			if metric == "" || len(byMetric[metric]) < 2 {
				continue
			}
			lines = append(lines, rankLine(VerdictLine{Workload: c.workload, Pairs: c.pairs, Path: c.path, Metric: metric}, byMetric[metric], ""))
		}
	} else {
		// One target: its paths against the baseline, per workload.
		byWorkload := map[cell]map[string]map[string][]float64{} // (workload, pairs) -> metric -> path -> values
		for c, byMetric := range values {
			k := cell{workload: c.workload, pairs: c.pairs}
			if byWorkload[k] == nil {
				byWorkload[k] = map[string]map[string][]float64{}
			}
			for m, byTarget := range byMetric {
				if byWorkload[k][m] == nil {
					byWorkload[k][m] = map[string][]float64{}
				}
				for _, xs := range byTarget {
					byWorkload[k][m][c.path] = xs
				}
			}
		}
		for k, byMetric := range byWorkload {
			metric := headlineOf(byMetric)
			if metric == "" {
				continue
			}
			against := ""
			if _, ok := byMetric[metric][suite.HostNetwork]; ok && len(byMetric[metric]) > 1 {
				against = suite.HostNetwork
			}
			lines = append(lines, rankLine(VerdictLine{Workload: k.workload, Pairs: k.pairs, Metric: metric}, byMetric[metric], against))
		}
	}
	sort.Slice(lines, func(i, j int) bool {
		a, b := lines[i], lines[j]
		if a.Workload != b.Workload {
			return a.Workload < b.Workload
		}
		if a.Pairs != b.Pairs {
			return a.Pairs < b.Pairs
		}
		return pathRank(a.Path) < pathRank(b.Path)
	})
	return lines
}

// headlineOf is the metric a workload's verdict is about.
func headlineOf(byMetric map[string]map[string][]float64) string {
	for _, m := range catalog.ProgressOrder() {
		if _, ok := byMetric[m]; ok {
			return m
		}
	}
	return ""
}

// rankLine fills a line's entries from each name's values, compared with against (or the
// best when against is empty).
func rankLine(l VerdictLine, byName map[string][]float64, against string) VerdictLine {
	spec, _ := catalog.Lookup(l.Metric)
	l.Unit, l.HigherIsBetter = spec.Unit, spec.HigherIsBetter
	l.Entries = rankEntries(l.Metric, byName, l.HigherIsBetter, against, "reference")
	l.Against = l.Entries[0].Target
	if against != "" {
		l.Against = against
	}
	return l
}

// WriteVerdict prints the verdict lines: one per workload and path, at most a screen.
func WriteVerdict(w io.Writer, lines []VerdictLine) {
	if len(lines) == 0 {
		return
	}
	fmt.Fprintln(w, "\nverdict (each workload's headline metric, best first, mean [95 % CI]; x = relative to the reference, p from Mann-Whitney U):")
	for _, l := range lines {
		dir := direction(l.HigherIsBetter)
		var parts []string
		for _, e := range l.Entries {
			part := entryText(e)
			if e.Verdict == "reference" && l.Path == "" {
				part += " (baseline)"
			}
			parts = append(parts, part)
		}
		label := store.Cell{Workload: l.Workload, Pairs: l.Pairs}.WorkloadLabel()
		where := l.Path
		if where == "" {
			where = "paths"
		}
		fmt.Fprintf(w, "  %-22s %-12s %s [%s, %s]: %s\n", label, where, l.Metric, l.Unit, dir, strings.Join(parts, " | "))
	}
}

// Brief prints what a run ends with: its header, the targets' environment and the verdict,
// with where to find the full table.
func Brief(w io.Writer, d Document) error {
	header(w, d)
	WriteVerdict(w, d.Verdict)
	if l := IntervalLegend(d.Rows); l != "" {
		fmt.Fprintln(w, l)
	}
	_, err := fmt.Fprintf(w, "\nevery metric: cnibench results show %s (or run with -v)\n", d.Run.ID)
	return err
}
