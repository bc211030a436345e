package analysis

import (
	"sort"
	"strings"

	"github.com/cnibench/cnibench/internal/catalog"
	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/stats"
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
	// Margin is the equivalence margin of a run with a precision target (suite.Margin, 0.02
	// for ±2 %), at which its loop stopped comparisons shown equivalent (Equivalent); 0 for a
	// run without one. Verdict leaves it 0; the report sets it from the run's suite.
	Margin float64 `json:"margin,omitempty"`
}

// Untested is the verdict of an entry with too few samples for a test.
const Untested = "untested"

// verdictCell is a (workload, pairs, path) cell; the path is empty when lines are per workload.
type verdictCell struct {
	workload string
	pairs    int
	path     string
}

// byMetric holds a cell's values by metric, then by target or path.
type byMetric map[string]map[string][]stats.Obs

func (b byMetric) add(metric, name string, o stats.Obs) {
	if b[metric] == nil {
		b[metric] = map[string][]stats.Obs{}
	}
	b[metric][name] = append(b[metric][name], o)
}

// Verdict picks, for every cell, the workload's headline metric (VerdictMetric: UDP's
// loss, else the first of catalog.ProgressOrder it measured) and ranks what the run compared
// on it.
func Verdict(samples []record.Sample) []VerdictLine {
	targets := map[string]bool{}
	for _, s := range samples {
		targets[s.Target] = true
	}
	var lines []VerdictLine
	for c, values := range verdictValues(samples, len(targets) > 1) {
		metric := VerdictMetric(c.workload, values)
		if metric == "" || (c.path != "" && len(values[metric]) < 2) {
			continue
		}
		against := ""
		if _, ok := values[metric][suite.HostNetwork]; c.path == "" && ok && len(values[metric]) > 1 {
			against = suite.HostNetwork
		}
		lines = append(lines, rankLine(VerdictLine{Workload: c.workload, Pairs: c.pairs, Path: c.path, Metric: metric}, values[metric], against))
	}
	sort.Slice(lines, func(i, j int) bool {
		a, b := lines[i], lines[j]
		if a.Workload != b.Workload {
			return a.Workload < b.Workload
		}
		if a.Pairs != b.Pairs {
			return a.Pairs < b.Pairs
		}
		return PathRank(a.Path) < PathRank(b.Path)
	})
	return lines
}

// verdictValues groups the measured values: with several targets by (workload, pairs, path)
// and target, so that targets are compared on each path; with one by (workload, pairs) and
// path, so that its paths are compared with each other.
func verdictValues(samples []record.Sample, byTarget bool) map[verdictCell]byMetric {
	out := map[verdictCell]byMetric{}
	for _, s := range samples {
		if s.Warmup || s.Error != "" {
			continue
		}
		c, name := verdictCell{s.Workload, s.Cell().Pairs, s.Path}, s.Target
		if !byTarget {
			c.path, name = "", s.Path
		}
		if out[c] == nil {
			out[c] = byMetric{}
		}
		for metric, v := range s.Metrics {
			out[c].add(metric, name, obs(s, v))
		}
	}
	return out
}

// rankLine fills a line's entries from each name's values, compared with against (or the
// best when against is empty).
func rankLine(l VerdictLine, byName map[string][]stats.Obs, against string) VerdictLine {
	spec, _ := catalog.Lookup(l.Metric)
	l.Unit, l.HigherIsBetter = spec.Unit, spec.HigherIsBetter
	l.Entries = rankEntries(l.Metric, byName, l.HigherIsBetter, against, "reference")
	l.Against = l.Entries[0].Target
	if against != "" {
		l.Against = against
	}
	return l
}

// IsSetup says whether a line holds a setup figure: its path, or with one target its only
// entry, is the setup pseudo-path.
func (l VerdictLine) IsSetup() bool {
	return l.Path == record.SetupPath || l.Path == "" && len(l.Entries) == 1 && l.Entries[0].Target == record.SetupPath
}

// VerdictMetric is the figure a verdict and a comparison's headline family are about for a
// workload ID among the metrics a cell has (keys of byName): its kind's own (UDP's loss or
// searched rate) where measured, else catalog.Primary.
func VerdictMetric[V any](workload string, byName map[string]V) string {
	k, _ := engine.LookupKind(WorkloadKind(workload))
	return catalog.VerdictMetric(k.VerdictMetrics, byName)
}

// WorkloadKind is the kind of a workload ID: "udp-stream" of "udp-stream/1300B@500M".
func WorkloadKind(id string) string {
	kind, _, _ := strings.Cut(id, "/")
	return kind
}
