package main

import (
	"fmt"

	"github.com/cnibench/cnibench/internal/history"
	"github.com/cnibench/cnibench/internal/label"
	"github.com/cnibench/cnibench/internal/store"
	"github.com/spf13/cobra"
)

func newHistoryCommand() *cobra.Command {
	var (
		o            history.Options
		selector     string
		output       string
		location     string
		failOnChange bool
	)
	cmd := &cobra.Command{
		Use:   "history",
		Short: "Follow figures over stored runs: each target's cells as series of run means, with their change points",
		Long: `Reads the complete stored runs whose labels match --selector (all without it), oldest first,
and follows each target, path, workload and metric over them (each cell's verdict metric unless
--metrics names others): one value per run, its mean. In each series it finds the change points
by E-Divisive means with a t test between segments, as Apache Otava does (segments of at least 3
runs; a 5 % chance of a false change point anywhere among the series printed, each searched at
5 % over their number), and prints each with the size of its step and its 95 % interval.

In CI, after storing each run with its labels (run --label branch=main --label commit=$SHA):

  cnibench history -l branch=main --last 30 --fail-on-change

exits 1 when a series' latest change point is for the worse (a throughput down, a latency up).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output, "table", "json"); err != nil {
				return err
			}
			var err error
			if o.Selector, err = label.ParseSelector(selector); err != nil {
				return fmt.Errorf("--selector: %w", err)
			}
			if o.Last < 0 {
				return fmt.Errorf("--last %d: expected 0 (all) or more", o.Last)
			}
			db, err := store.OpenExisting(cmd.Context(), location)
			if err != nil {
				return fmt.Errorf("--store: %w", err)
			}
			defer db.Close()
			series, runs, err := history.BuildCounted(cmd.Context(), db, o)
			if err != nil {
				return err
			}
			if err := history.Write(cmd.OutOrStdout(), output, series, runs); err != nil {
				return err
			}
			if failOnChange {
				return history.Check(series)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&selector, "selector", "l", "", "only runs whose labels match, e.g. branch=main (key, !key, key=value, key!=value)")
	f.IntVar(&o.Last, "last", 0, "only the newest this many matching runs (default all)")
	f.StringVar(&o.Target, "target", "", "only this target")
	f.StringVar(&o.Path, "path", "", "only this path, e.g. cross-node")
	f.StringVar(&o.Workload, "workload", "", "only this workload or kind, e.g. tcp-stream/1 or tcp-rr")
	f.StringSliceVar(&o.Metrics, "metrics", nil, "follow these metrics instead of each cell's verdict metric, e.g. latency_p99_us")
	f.StringVarP(&output, "output", "o", "table", "output format: table or json")
	f.BoolVar(&failOnChange, "fail-on-change", false, "exit 1 when a series' latest change point is for the worse")
	storeFlags(cmd, &location, false)
	return cmd
}
