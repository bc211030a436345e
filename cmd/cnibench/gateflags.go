package main

import (
	"fmt"
	"strings"

	"github.com/cnibench/cnibench/internal/compare"
	"github.com/spf13/pflag"
)

// gateFlags are the flags of the gate, which compare and run (against --baseline) share.
type gateFlags struct {
	failOn, tolerance, detect string
	metrics                   []string
}

// bind defines the gate's flags; what names what --fail-on worse is compared with, for the
// help.
func (g *gateFlags) bind(f *pflag.FlagSet, what string) {
	f.StringVar(&g.failOn, "fail-on", "never", what+"never, or worse: exit 1 where a gated metric is shown worse by more than --tolerance "+
		"(family-wise 5 %), 3 where the gate could not catch --detect")
	f.StringVar(&g.tolerance, "tolerance", "0%", "with --fail-on worse: the accepted worsening of a gated metric, e.g. 5% (in points for UDP loss)")
	f.StringVar(&g.detect, "detect", "", "with --fail-on worse: the worsening the gate must catch four times in five, above --tolerance "+
		"(default 10%, or twice --tolerance if larger)")
	f.StringSliceVar(&g.metrics, "gate-metrics", nil, "with --fail-on worse: metrics gated besides each cell's verdict metric, e.g. latency_p99_us")
}

// gate reads the flags into a gate, which is nil unless --fail-on worse.
func (g *gateFlags) gate() (*compare.Gate, error) {
	if !validFormat(g.failOn, compare.FailOnValues()...) {
		return nil, fmt.Errorf("--fail-on %q: expected one of %s", g.failOn, strings.Join(compare.FailOnValues(), ", "))
	}
	out, err := g.settings()
	if err != nil || g.failOn != "worse" {
		return nil, err
	}
	return &out, nil
}

// settings reads the tolerance, the size to detect and the added metrics, whatever --fail-on.
func (g *gateFlags) settings() (compare.Gate, error) {
	out := compare.Gate{Metrics: g.metrics}
	var err error
	if out.Tolerance, err = compare.ParseTolerance(g.tolerance); err != nil {
		return out, fmt.Errorf("--tolerance %w", err)
	}
	if g.detect != "" {
		if out.Detect, err = compare.ParseTolerance(g.detect); err != nil {
			return out, fmt.Errorf("--detect %w", err)
		}
	}
	return out, out.Validate()
}
