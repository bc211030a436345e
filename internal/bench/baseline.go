package bench

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/cnibench/cnibench/internal/compare"
	"github.com/cnibench/cnibench/internal/export"
	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/setting"
)

// compareBaseline compares each target of the finished run with the baseline run's target of
// the same name (or its only target, when both runs have one), printing each comparison and
// applying the gate when one is set.
func compareBaseline(ctx context.Context, w io.Writer, src export.Source, baseline string, run record.Run, targets []record.Target, gate *compare.Gate) error {
	// The run and its targets only: Compare reads the samples of the sides it compares.
	base, err := src.Run(ctx, baseline)
	if err != nil {
		return &setting.Error{Name: "baseline", Value: baseline, Err: err}
	}
	baseTargets, err := src.Targets(ctx, base.ID)
	if err != nil {
		return &setting.Error{Name: "baseline", Value: baseline, Err: err}
	}
	names := map[string]bool{}
	for _, t := range baseTargets {
		names[t.Name] = true
	}
	var errs []error
	compared := 0
	for _, t := range targets {
		a := compare.Side{Run: base.ID, Target: t.Name}
		if !names[t.Name] {
			if len(baseTargets) != 1 || len(targets) != 1 {
				continue
			}
			a.Target = baseTargets[0].Name
		}
		res, err := compare.Compare(ctx, src, compare.Options{A: a, B: compare.Side{Run: run.ID, Target: t.Name}, Seed: compare.DefaultSeed})
		if err != nil {
			errs = append(errs, fmt.Errorf("compare with the baseline %s: %w", baseline, err))
			continue
		}
		compared++
		fmt.Fprintf(w, "\nAgainst the baseline run %s:\n", base.ID)
		if err := compare.Write(w, compare.FormatTable, res); err != nil {
			return err
		}
		if gate != nil {
			judged := gate.Evaluate(res)
			if err := compare.WriteGate(w, compare.FormatTable, judged); err != nil {
				return err
			}
			errs = append(errs, judged.Err(res))
		}
	}
	if compared == 0 && len(errs) == 0 {
		return &setting.Error{Name: "baseline", Value: baseline, Want: fmt.Sprintf("no target of the same name to compare with (the baseline has %d)", len(baseTargets))}
	}
	return joinGateErrors(errs)
}

// joinGateErrors joins the targets' errors so that the run exits as its worst target: a
// regression or an error (1) before an inconclusive gate (3), which alone keeps its status.
func joinGateErrors(errs []error) error {
	var inconclusive, others []error
	for _, err := range errs {
		var inc *compare.InconclusiveError
		switch {
		case err == nil:
		case errors.As(err, &inc):
			inconclusive = append(inconclusive, err)
		default:
			others = append(others, err)
		}
	}
	if len(others) > 0 {
		// The inconclusive ones are told but not unwrapped: they would lend the run their status.
		return &worstError{msg: errors.Join(append(others, inconclusive...)...).Error(), errs: others}
	}
	if len(inconclusive) == 1 {
		return inconclusive[0]
	}
	if len(inconclusive) > 1 {
		return &compare.InconclusiveError{Msg: errors.Join(inconclusive...).Error()}
	}
	return nil
}

// worstError reads as every target's error and unwraps to the failures alone.
type worstError struct {
	msg  string
	errs []error
}

func (e *worstError) Error() string   { return e.msg }
func (e *worstError) Unwrap() []error { return e.errs }
