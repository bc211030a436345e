package suite

import (
	"fmt"
	"slices"

	"github.com/cnibench/cnibench/internal/catalog"
)

// Reference is a published study a suite reproduces: its setup in a line and the figures it
// reported, which reports set beside the run's own.
type Reference struct {
	// Study names the study and its setup (cluster, machines, tool), the context a reader
	// needs to weigh a difference.
	Study   string            `json:"study"`
	Figures []ReferenceFigure `json:"figures"`
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
}

// validateReference checks that every figure names a cell and metric of the suite.
func (s Suite) validateReference() []error {
	r := s.Reference
	if r == nil {
		return nil
	}
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if r.Study == "" {
		add("reference.study: expected the study and its setup in a line")
	}
	if len(r.Figures) == 0 {
		add("reference.figures: expected at least one figure")
	}
	var targets, workloads []string
	for _, t := range s.Targets {
		targets = append(targets, t.Name)
	}
	for _, w := range s.Workloads {
		workloads = append(workloads, w.Engine(s.Duration.Duration).ID())
	}
	for i, f := range r.Figures {
		at := fmt.Sprintf("reference.figures[%d]", i)
		if !slices.Contains(targets, f.Target) {
			add("%s.target: %q: expected one of the suite's targets %v", at, f.Target, targets)
		}
		if f.Against != "" && (!slices.Contains(targets, f.Against) || f.Against == f.Target) {
			add("%s.against: %q: expected another of the suite's targets %v", at, f.Against, targets)
		}
		if !slices.Contains(s.Paths, f.Path) {
			add("%s.path: %q: expected one of the suite's paths %v", at, f.Path, s.Paths)
		}
		if !slices.Contains(workloads, f.Workload) {
			add("%s.workload: %q: expected the ID of one of the suite's workloads %v", at, f.Workload, workloads)
		}
		if f.Pairs != 0 && !slices.Contains(s.Pairs, f.Pairs) {
			add("%s.pairs: %d: expected one of the suite's pairs levels %v", at, f.Pairs, s.Pairs)
		}
		if _, ok := catalog.Lookup(f.Metric); !ok {
			add("%s.metric: %q: expected a metric name such as %s", at, f.Metric, catalog.Throughput)
		}
		if f.Value < 0 || (f.Against != "" && f.Value == 0) {
			add("%s.value: expected a figure >= 0 (a ratio > 0 with against), got %g", at, f.Value)
		}
	}
	return errs
}

// within keeps the figures whose target and path the suite has; nil when none is left.
func (r *Reference) within(s Suite) *Reference {
	if r == nil {
		return nil
	}
	var targets []string
	for _, t := range s.Targets {
		targets = append(targets, t.Name)
	}
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
