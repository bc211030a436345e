package main

import (
	"fmt"
	"strings"

	"github.com/cnibench/cnibench/internal/compare"
	"github.com/cnibench/cnibench/internal/export"
	"github.com/cnibench/cnibench/internal/stats"
	"github.com/spf13/cobra"
)

func newCompareCommand() *cobra.Command {
	var (
		o         compare.Options
		output    string
		location  string
		failOn    string
		tolerance string
		pairing   string
	)
	cmd := &cobra.Command{
		Use:   "compare A B",
		Short: "Compare two runs or two targets: ratio B/A with a 95 % interval, p-value and verdict per metric",
		Long: `Compares configuration B against baseline A for every path, workload and metric both measured
(warm-up and failed samples left out): n and mean of each side, the ratio of means B/A with its
95 % confidence interval (Welch's on the log scale), the two-sided Mann-Whitney p-value, and a
verdict from B's point of view: "better", "worse" or "no significant difference", using each
metric's direction (throughput higher, latency and CPU cost lower); "n/a" where the direction is
unknown.

A verdict needs the interval to exclude 1 and the p-value, adjusted for the other metrics of the
same workload and path (they come from the same samples and are read together), to be below
0.05. --p-adjust bh (the default) keeps the share of
chance verdicts among those given at 5 % (Benjamini-Hochberg); holm keeps the chance of even one
at 5 %, which with 5 runs a side and dozens of metrics calls nothing; none tests every metric on
its own, so about one in twenty identical metrics comes out "better" or "worse". --metrics
narrows the family as well as the output.

A and B are each a run (id or unique prefix) or a target of a run written RUN/TARGET, e.g.
two datapaths measured in one run:

  cnibench compare 20261121-101500-ab12/bridge 20261121-101500-ab12/cilium-vxlan -o md

Two targets of one run were measured in the same rounds, each round a moment of the machine
both saw: where every round measured both, a row is compared round by round ("paired": the
geometric mean of the per-round ratios, with the paired t's interval and p), which removes the
machine's swings between rounds from the comparison. --pairing off compares them as independent
samples, as two runs always are.

The bootstrap is seeded (--seed), so the same comparison prints the same figures every time.

As a gate in a pipeline, --fail-on worse exits non-zero when a headline metric of B is
significantly worse than A's (the verdict "worse") by more than --tolerance:

  cnibench compare BEFORE AFTER --fail-on worse --tolerance 5%`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if o.A, err = compare.ParseSide(args[0]); err != nil {
				return fmt.Errorf("argument A: %w", err)
			}
			if o.B, err = compare.ParseSide(args[1]); err != nil {
				return fmt.Errorf("argument B: %w", err)
			}
			if !validFormat(o.Adjust, stats.AdjustMethods()...) {
				return fmt.Errorf("--p-adjust %q: expected one of %s", o.Adjust, strings.Join(stats.AdjustMethods(), ", "))
			}
			if !validFormat(output, compare.Formats()...) && output != "markdown" {
				return fmt.Errorf("-o %q: expected one of %s", output, strings.Join(compare.Formats(), ", "))
			}
			switch pairing {
			case "auto":
				o.Pairing = stats.PairAuto
			case "off":
				o.Pairing = stats.PairOff
			default:
				return fmt.Errorf("--pairing %q: expected auto or off", pairing)
			}
			if !validFormat(failOn, compare.FailOnValues()...) {
				return fmt.Errorf("--fail-on %q: expected one of %s", failOn, strings.Join(compare.FailOnValues(), ", "))
			}
			tol, err := compare.ParseTolerance(tolerance)
			if err != nil {
				return fmt.Errorf("--tolerance %w", err)
			}
			db, err := export.OpenExisting(cmd.Context(), location)
			if err != nil {
				return fmt.Errorf("--store: %w", err)
			}
			defer db.Close()
			res, err := compare.Compare(cmd.Context(), db, o)
			if err != nil {
				return err
			}
			if err := compare.Write(cmd.OutOrStdout(), output, res); err != nil {
				return err
			}
			if failOn == "worse" {
				return compare.Gate{Tolerance: tol}.Check(res)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&output, "output", "o", compare.FormatTable, "output format: "+strings.Join(compare.Formats(), ", "))
	f.StringSliceVar(&o.Metrics, "metrics", nil, "compare only these metrics (comma-separated), e.g. throughput_gbps,cpu_s_per_gb")
	f.Int64Var(&o.Seed, "seed", compare.DefaultSeed, "bootstrap seed (stored in the output)")
	f.StringVar(&o.Adjust, "p-adjust", compare.DefaultAdjust, "multiple-comparison adjustment of the verdicts' p-values: "+
		strings.Join(stats.AdjustMethods(), ", "))
	f.StringVar(&pairing, "pairing", "auto", "auto: two targets of one run are compared round by round where every round measured both "+
		"(paired t on the per-round log ratios); off: always as independent samples (Welch interval, Mann-Whitney U)")
	f.StringVar(&failOn, "fail-on", "never", "exit non-zero when B is: never, or worse (a headline metric significantly worse by more than --tolerance)")
	f.StringVar(&tolerance, "tolerance", "0%", "with --fail-on worse: the accepted worsening of a headline metric's mean, e.g. 5%")
	storeFlags(cmd, &location, false)
	return cmd
}
