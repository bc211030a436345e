// Package bench is the `cnibench run` command's body: it resolves the suite, prints the plan
// for a dry run, opens the results store, runs the suite and prints the summary.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/cnibench/cnibench/internal/compare"
	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/report"
	"github.com/cnibench/cnibench/internal/runner"
	"github.com/cnibench/cnibench/internal/setting"
	"github.com/cnibench/cnibench/internal/store"
	"github.com/cnibench/cnibench/internal/suite"
)

// Options are the run command's settings.
type Options struct {
	SuiteFile string
	Overrides suite.Overrides
	Runner    runner.Options // Suite and Store are filled in here
	Results   string         // store location; empty: store.DefaultPath()
	Output    string         // table, json or yaml
	Verbose   bool           // the full table, not just the verdict
	DryRun    bool
	// NoiseFrom is a stored run whose noise a dry run plans PlanGate's power from.
	NoiseFrom string
	PlanGate  compare.Gate
	Stdout    io.Writer // summary
	// Baseline is a stored run to compare the new one with at the end; Gate, when set, makes
	// a significant regression against it an error.
	Baseline string
	Gate     *compare.Gate
	// CurrentContext makes the default target the kubeconfig's current context (KUBECONFIG
	// or ~/.kube/config, as kubectl reads it) instead of the local cluster, where neither a
	// suite file nor a target flag names one: how `kubectl cnibench run` is expected to work.
	CurrentContext bool
}

// targetFlagsSet reports whether the overrides name the run's targets.
func targetFlagsSet(o suite.Overrides) bool {
	return o.Kubeconfig != "" || o.Context != "" || len(o.Datapaths) > 0 || o.LocalCluster != "" || o.Datapath != "" ||
		len(o.CRIs) > 0 || o.Kubernetes != "" || o.ProxyMode != "" || len(o.NetworkPolicies) > 0
}

// Run executes the run command.
func Run(ctx context.Context, o Options) error {
	if o.Output != "table" && o.Output != "json" && o.Output != "yaml" {
		return &setting.Error{Name: "output", Value: fmt.Sprintf("%q", o.Output), Want: "expected table, json or yaml"}
	}
	if o.CurrentContext && o.SuiteFile == "" && !targetFlagsSet(o.Overrides) {
		name, err := kube.CurrentContext()
		if err != nil {
			return err
		}
		o.Overrides.Context = name
	}
	s, err := suite.Resolve(o.SuiteFile, o.Overrides)
	if err != nil {
		return err
	}
	if o.DryRun {
		seed := s.Seed
		if seed == 0 {
			seed = 1
			fmt.Fprintln(o.Stdout, "# no --seed: the real run shuffles with a fresh seed; this plan uses seed 1")
		}
		runner.PrintPlan(o.Stdout, runner.Schedule(s, seed), seed)
		if o.NoiseFrom != "" {
			return planGate(ctx, o, s.Repetitions)
		}
		return nil
	}
	location := o.Results
	if location == "" {
		location = store.DefaultLocation()
	}
	db, err := store.Open(ctx, location)
	if err != nil {
		return err
	}
	defer db.Close()
	if o.Baseline != "" {
		// Checked before measuring, not after the run it would be compared with.
		if _, err := db.Run(ctx, o.Baseline); err != nil {
			return &setting.Error{Name: "baseline", Value: o.Baseline, Err: err}
		}
	}
	o.Runner.Suite, o.Runner.Store = s, db
	res, err := runner.Run(ctx, o.Runner)
	if len(res.Samples) > 0 {
		doc := report.NewDocument(res.Run, res.Targets, res.Samples)
		format := o.Output
		if format == "table" && !o.Verbose {
			format = "brief" // the verdict; the full table is one flag away
		}
		if werr := report.Write(o.Stdout, format, doc); werr != nil && err == nil {
			err = werr
		}
	}
	if res.Run.ID != "" {
		fmt.Fprintf(o.Runner.Out, "results: run %s (%s) in %s\n", res.Run.ID, res.Run.Status, location)
	}
	if o.Baseline != "" && err == nil {
		err = compareBaseline(ctx, o.Stdout, db, o.Baseline, res.Run, res.Targets, o.Gate)
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("interrupted: run %s is stored as partial with %d samples", res.Run.ID, len(res.Samples))
	}
	return err
}

// planGate prints what a gate could catch at the suite's rounds, from a stored run's noise.
func planGate(ctx context.Context, o Options, rounds int) error {
	location := o.Results
	if location == "" {
		location = store.DefaultLocation()
	}
	db, err := store.OpenExisting(ctx, location)
	if err != nil {
		return &setting.Error{Name: "store", Err: err}
	}
	defer db.Close()
	res, noise, err := compare.NoiseFrom(ctx, db, o.NoiseFrom)
	if err != nil {
		return &setting.Error{Name: "noiseFrom", Value: o.NoiseFrom, Err: err}
	}
	return compare.WritePlan(o.Stdout, o.PlanGate.PlanFor(res, noise, rounds))
}
