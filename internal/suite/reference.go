package suite

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/cnibench/cnibench/internal/catalog"
	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/setting"
)

// Reference is a published study a suite reproduces: its setup in a line and the figures it
// reported, which reports set beside the run's own.
type Reference struct {
	// Study names the study and its setup (cluster, machines, tool), the context a reader
	// needs to weigh a difference.
	Study   string            `json:"study"`
	Figures []ReferenceFigure `json:"figures"`
	// Durations are the study's own sample durations by workload kind (its iperf3 -t, its
	// netperf -l), which --faithful measures with instead of the suite's quicker ones.
	Durations map[string]Duration `json:"durations,omitempty"`
	// Tools are the study's own tools by workload kind (netperf, for its TCP_STREAM, TCP_RR and
	// TCP_CRR), which --faithful measures with instead of the suite's.
	Tools map[string]string `json:"tools,omitempty"`
}

// Faithful gives each workload of s the study's sample duration and tool for its kind; the
// figures of a workload whose tool changes follow it to its new ID.
func (s Suite) Faithful() (Suite, error) {
	if s.Reference == nil || len(s.Reference.Durations) == 0 {
		return s, &setting.Error{Name: "faithful", Want: "the suite names no study durations (reference.durations, e.g. {tcp-stream: 30s})"}
	}
	s.Workloads = slices.Clone(s.Workloads)
	ref := *s.Reference
	ref.Figures = slices.Clone(ref.Figures)
	for i, w := range s.Workloads {
		if d, ok := ref.Durations[w.Kind]; ok {
			s.Workloads[i].Duration = d
		}
		tool, ok := ref.Tools[w.Kind]
		if !ok || tool == w.Tool {
			continue
		}
		was := w.Engine(s.Duration.Duration).ID()
		s.Workloads[i].Tool = tool
		now := s.Workloads[i].Engine(s.Duration.Duration).ID()
		for j, f := range ref.Figures {
			if f.Workload == was {
				ref.Figures[j].Workload = now
			}
		}
	}
	s.Reference = &ref
	return s, nil
}

// ReferenceFigure is one figure of the study, located in the suite's matrix.
type ReferenceFigure struct {
	// Target, Path, Workload (its ID, e.g. tcp-stream/1) and Metric (a catalog name) are
	// the cell and figure of this suite the study's figure corresponds to.
	Target   string `json:"target"`
	Path     string `json:"path"`
	Workload string `json:"workload"`
	Metric   string `json:"metric"`
	// Pairs is the concurrency level of the cell (default 1).
	Pairs int `json:"pairs,omitempty"`
	// Value is the study's figure in the metric's unit or, with Against, the ratio the study
	// reported of Target's figure to Against's (1.416: 41.6 % more).
	Value   float64 `json:"value"`
	Against string  `json:"against,omitempty"`
	// PerPair says the study's figure is per client/server pair (per container), where the
	// suite's metric sums the pairs: the run's figure is then divided by the cell's pairs.
	PerPair bool `json:"perPair,omitempty"`
}

// validateReference checks that every figure names a cell and metric of the suite.
func (s Suite) validateReference() []error {
	r := s.Reference
	if r == nil {
		return nil
	}
	var errs []error
	add := collect(&errs)
	if r.Study == "" {
		add("reference.study", "expected the study and its setup in a line")
	}
	if len(r.Figures) == 0 {
		add("reference.figures", "expected at least one figure")
	}
	targets := s.variantNames()
	var workloads, kinds []string
	for _, w := range s.Workloads {
		kinds = append(kinds, w.Kind)
	}
	for _, kind := range slices.Sorted(maps.Keys(r.Durations)) {
		d := r.Durations[kind].Duration
		if !slices.Contains(kinds, kind) {
			add(fmt.Sprintf("reference.durations.%s", kind), "expected a workload kind of the suite %v", kinds)
		}
		if d < time.Second || d%time.Second != 0 {
			add(fmt.Sprintf("reference.durations.%s", kind), "expected whole seconds, at least 1s, got %s", r.Durations[kind])
		}
	}
	s.validateReferenceTools(add, kinds)
	for _, w := range s.Workloads {
		workloads = append(workloads, w.Engine(s.Duration.Duration).ID())
	}
	paths, cells := s.pathsOfWorkloads()
	for i, f := range r.Figures {
		at := fmt.Sprintf("reference.figures[%d]", i)
		if !slices.Contains(targets, f.Target) {
			add(fmt.Sprintf("%s.target", at), "%q: expected one of the suite's targets %v", f.Target, targets)
		}
		if f.Against != "" && (!slices.Contains(targets, f.Against) || f.Against == f.Target) {
			add(fmt.Sprintf("%s.against", at), "%q: expected another of the suite's targets %v", f.Against, targets)
		}
		switch {
		case !slices.Contains(paths, f.Path):
			add(fmt.Sprintf("%s.path", at), "%q: expected one of the suite's paths %v", f.Path, paths)
		case !slices.Contains(workloads, f.Workload):
			add(fmt.Sprintf("%s.workload", at), "%q: expected the ID of one of the suite's workloads %v", f.Workload, workloads)
		case !slices.Contains(cells[f.Workload], f.Path):
			add(fmt.Sprintf("%s.path", at), "%s runs on %v, not on %s", f.Workload, cells[f.Workload], f.Path)
		}
		if f.Pairs != 0 && !slices.Contains(s.Pairs, f.Pairs) {
			add(fmt.Sprintf("%s.pairs", at), "%d: expected one of the suite's pairs levels %v", f.Pairs, s.Pairs)
		}
		spec, ok := catalog.Lookup(f.Metric)
		if !ok {
			add(fmt.Sprintf("%s.metric", at), "%q: expected a metric name such as %s", f.Metric, catalog.Throughput)
		}
		if ok && f.PerPair && spec.Pairs != catalog.Sum {
			add(fmt.Sprintf("%s.perPair", at), "%s is not summed over pairs; expected perPair only with a summed metric such as %s", f.Metric, catalog.Throughput)
		}
		if f.Value < 0 || (f.Against != "" && f.Value == 0) {
			add(fmt.Sprintf("%s.value", at), "expected a figure >= 0 (a ratio > 0 with against), got %g", f.Value)
		}
	}
	return errs
}

// validateReferenceTools checks the study's tools: a kind of the suite's, and a tool that
// measures every workload of that kind.
func (s Suite) validateReferenceTools(add func(at, format string, args ...any), kinds []string) {
	r := s.Reference
	for _, kind := range slices.Sorted(maps.Keys(r.Tools)) {
		at := fmt.Sprintf("reference.tools.%s", kind)
		if !slices.Contains(kinds, kind) {
			add(at, "expected a workload kind of the suite %v", kinds)
			continue
		}
		for _, w := range s.Workloads {
			if w.Kind != kind {
				continue
			}
			w.Tool = r.Tools[kind]
			var ute *engine.UnsupportedToolError
			if err := w.Engine(time.Second).Validate(); errors.As(err, &ute) {
				add(at, "%q: %s does not measure %s; it measures %s", r.Tools[kind], ute.Tool, ute.Workload, ute.Measures)
			} else if err != nil {
				add(at, "%q: %v", r.Tools[kind], err)
			}
		}
	}
}

// within keeps the figures whose target and path the suite has; nil when none is left.
func (r *Reference) within(s Suite) *Reference {
	if r == nil {
		return nil
	}
	targets := s.variantNames()
	kept := *r
	kept.Figures = nil
	for _, f := range r.Figures {
		if slices.Contains(targets, f.Target) && (f.Against == "" || slices.Contains(targets, f.Against)) && slices.Contains(s.Paths, f.Path) {
			kept.Figures = append(kept.Figures, f)
		}
	}
	if len(kept.Figures) == 0 {
		return nil
	}
	return &kept
}

// variantNames are the names of the targets the suite measures: one per runtime and tuning
// variant ("containerd.runc"), as samples name them.
func (s Suite) variantNames() []string {
	var names []string
	for _, t := range s.Expand().Targets {
		names = append(names, t.Name)
	}
	return names
}

// pathsOfWorkloads lists the paths of the suite's cells, in-pod included where a workload runs
// inside one pod, and the paths each workload (by ID) runs on.
func (s Suite) pathsOfWorkloads() (paths []string, byWorkload map[string][]string) {
	byWorkload = map[string][]string{}
	for _, c := range s.Matrix() {
		id := c.Workload.Engine(s.Duration.Duration).ID()
		if !slices.Contains(byWorkload[id], c.Path) {
			byWorkload[id] = append(byWorkload[id], c.Path)
		}
		if !slices.Contains(paths, c.Path) {
			paths = append(paths, c.Path)
		}
	}
	return paths, byWorkload
}
