package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/cnibench/cnibench/internal/compare"
	"github.com/cnibench/cnibench/internal/label"
	"github.com/cnibench/cnibench/internal/stats"
	"github.com/cnibench/cnibench/internal/store"
	"github.com/spf13/cobra"
)

// compareOptions are the flags and arguments of `cnibench compare`.
type compareOptions struct {
	o        compare.Options
	output   string
	location string
	pairing  string
	gate     gateFlags
	baseline string // --baseline: a selector of the runs to pool
	last     int
}

const compareLong = `Compares configuration B against baseline A for every path, workload and metric both measured
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

Every row estimates the same thing, the ratio of the means. Two targets of one run were
measured in the same rounds, each round a moment of the machine both saw: a row is compared
round by round over the rounds that measured both ("paired": Fieller's interval and the paired t
on the per-round differences; rounds one side missed are left out and counted), which removes
the machine's swings between rounds from the comparison. --pairing off compares them as
independent samples, as two runs always are.

As a gate in a pipeline, --fail-on worse judges one family of tests: each cell's verdict metric
(throughput, connection rate, p50 latency, UDP's loss...; --gate-metrics adds others, e.g.
latency_p99_us). It fails (exit 1) where B is shown worse than A by more than --tolerance: a
one-sided t test of "worse by more than the tolerance" on each metric, the family-wise error held
at 5 % by Holm over every test. So with nothing changed it fails at most 5 % of the time, and a
true worsening equal to the tolerance fails at most 5 % of the time too. It prints, per gated
metric, the smallest worsening it would catch four times in five at its noise and n, and how many
rounds would catch --detect (default 10 %); where some metric could not catch --detect and none
failed, the gate is inconclusive and exits 3, not 0: a pipeline never passes a run it could not
judge.

  cnibench compare BEFORE AFTER --fail-on worse --tolerance 5%    # exit 0 pass, 1 regression, 3 inconclusive

A CI that stores a run per commit (run --label branch=main --label commit=$SHA) can judge a run
against the last runs of its branch instead of one run: each baseline run is one value (its
mean), and the spread between runs is the noise, which one run against one run cannot see:

  cnibench compare --baseline branch=main --last 10 RUN --fail-on worse`

func newCompareCommand() *cobra.Command {
	var c compareOptions
	cmd := &cobra.Command{
		Use:   "compare A B | compare --baseline SELECTOR B",
		Short: "Compare two runs or two targets: ratio B/A with a 95 % interval, p-value and verdict per metric",
		Long:  compareLong,
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.run(cmd.Context(), cmd.OutOrStdout(), args, cmd.Flags().Changed("baseline"))
		},
	}
	f := cmd.Flags()
	f.StringVarP(&c.output, "output", "o", compare.FormatTable, "output format: "+strings.Join(compare.Formats(), ", "))
	f.StringSliceVar(&c.o.Metrics, "metrics", nil, "compare only these metrics (comma-separated), e.g. throughput_gbps,cpu_s_per_gb")
	f.Int64Var(&c.o.Seed, "seed", compare.DefaultSeed, "no longer used: no figure of compare is random")
	_ = f.MarkHidden("seed") // kept so that scripts passing it still run
	f.StringVar(&c.o.Adjust, "p-adjust", compare.DefaultAdjust, "multiple-comparison adjustment of the verdicts' p-values: "+
		strings.Join(stats.AdjustMethods(), ", "))
	f.StringVar(&c.pairing, "pairing", "auto", "auto: two targets of one run are compared round by round where every round measured both "+
		"(paired t on the per-round differences, Fieller's interval); off: always as independent samples (Welch interval, Mann-Whitney U)")
	c.gate.bind(f, "")
	f.StringVar(&c.baseline, "baseline", "", "compare one run B with the last --last stored runs whose labels match this selector "+
		"(e.g. branch=main), pooled: each run one value, the spread between runs the noise")
	f.IntVar(&c.last, "last", compare.DefaultLast, "with --baseline: how many of the newest matching runs that started before B to pool")
	storeFlags(cmd, &c.location, false)
	return cmd
}

// parse reads the arguments and the flags that need reading.
func (c *compareOptions) parse(args []string, pooled bool) error {
	if pooled != (len(args) == 1) {
		return fmt.Errorf("expected A and B, or one run B with --baseline SELECTOR; got %d argument(s)", len(args))
	}
	var err error
	if c.o.B, err = compare.ParseSide(args[len(args)-1]); err != nil {
		return fmt.Errorf("argument B: %w", err)
	}
	if !pooled {
		if c.o.A, err = compare.ParseSide(args[0]); err != nil {
			return fmt.Errorf("argument A: %w", err)
		}
	}
	if !validFormat(c.o.Adjust, stats.AdjustMethods()...) {
		return fmt.Errorf("--p-adjust %q: expected one of %s", c.o.Adjust, strings.Join(stats.AdjustMethods(), ", "))
	}
	if c.output != "markdown" { // md's former name
		if err := checkOutput(c.output, compare.Formats()...); err != nil {
			return err
		}
	}
	switch c.pairing {
	case "auto":
		c.o.Pairing = stats.PairAuto
	case "off":
		c.o.Pairing = stats.PairOff
	default:
		return fmt.Errorf("--pairing %q: expected auto or off", c.pairing)
	}
	return nil
}

// run compares, writes the comparison, and judges it where --fail-on worse asks.
func (c *compareOptions) run(ctx context.Context, w io.Writer, args []string, pooled bool) error {
	if err := c.parse(args, pooled); err != nil {
		return err
	}
	gate, err := c.gate.gate()
	if err != nil {
		return err
	}
	db, err := store.OpenExisting(ctx, c.location)
	if err != nil {
		return fmt.Errorf("--store: %w", err)
	}
	defer db.Close()
	var res compare.Result
	if pooled {
		sel, serr := label.ParseSelector(c.baseline)
		if serr != nil {
			return fmt.Errorf("--baseline: %w", serr)
		}
		res, err = compare.ComparePooled(ctx, db, compare.PoolOptions{B: c.o.B, Selector: sel, Last: c.last, Metrics: c.o.Metrics})
	} else {
		res, err = compare.Compare(ctx, db, c.o)
	}
	if err != nil {
		return err
	}
	if gate == nil {
		return compare.Write(w, c.output, res)
	}
	judged := gate.Evaluate(res)
	res.Gate = &judged // JSON: one document, the gate in it
	if err := compare.Write(w, c.output, res); err != nil {
		return err
	}
	if c.output != compare.FormatJSON {
		if err := compare.WriteGate(w, c.output, judged); err != nil {
			return err
		}
	}
	return judged.Err(res)
}
