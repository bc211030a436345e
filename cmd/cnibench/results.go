package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cnibench/cnibench/internal/export"
	"github.com/cnibench/cnibench/internal/label"
	"github.com/cnibench/cnibench/internal/report"
	"github.com/cnibench/cnibench/internal/setting"
	"github.com/cnibench/cnibench/internal/store"
	"github.com/spf13/cobra"
)

func newResultsCommand() *cobra.Command {
	var location string
	cmd := &cobra.Command{
		Use:   "results",
		Short: "List, show, export, import and delete stored runs",
	}
	storeFlags(cmd, &location, true)
	cmd.AddCommand(newResultsListCommand(&location), newResultsShowCommand(&location),
		newResultsDeleteCommand(&location), newResultsExportCommand(&location), newResultsFlameGraphCommand(&location),
		newResultsImportCommand(&location))
	return cmd
}

// storeFlags binds --store, and --results as a hidden alias (run's first spelling), on every
// command that reads or writes results; persistent flags reach every subcommand.
func storeFlags(cmd *cobra.Command, location *string, persistent bool) {
	f := cmd.Flags()
	if persistent {
		f = cmd.PersistentFlags()
	}
	f.StringVar(location, "store", "", "results store: a file, a directory, or a sqlite:// or postgres:// URL (default $"+
		store.EnvStore+", else ~/.local/share/cnibench/results.db)")
	f.StringVar(location, "results", "", "same as --store")
	_ = f.MarkHidden("results") // the flag was just defined, so this cannot fail
}

func validFormat(format string, formats ...string) bool { return slices.Contains(formats, format) }

// checkOutput refuses an output format (-o) the command does not write, before any library is
// asked to write it: every command checks its -o here, with one message.
func checkOutput(format string, formats ...string) error {
	if validFormat(format, formats...) {
		return nil
	}
	return fmt.Errorf("-o %q: expected %s", format, orList(formats))
}

// orList reads a list as "a or b", "a, b or c".
func orList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

func newResultsListCommand(location *string) *cobra.Command {
	var output, selector string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List stored runs, newest first: id, start, status, targets, samples, duration",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output, "table", "json"); err != nil {
				return err
			}
			sel, err := label.ParseSelector(selector)
			if err != nil {
				return fmt.Errorf("--selector: %w", err)
			}
			db, err := store.OpenExisting(cmd.Context(), *location)
			if errors.Is(err, store.ErrNoStore) {
				// Nothing stored yet is an empty list, not a failure.
				return export.WriteList(cmd.OutOrStdout(), output, nil)
			} else if err != nil {
				return fmt.Errorf("--store: %w", err)
			}
			defer db.Close()
			runs, err := export.List(cmd.Context(), db, sel)
			if err != nil {
				return err
			}
			return export.WriteList(cmd.OutOrStdout(), output, runs)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json")
	cmd.Flags().StringVarP(&selector, "selector", "l", "", "only runs whose labels match, e.g. branch=main,kernel!=6.1 (key, !key, key=value, key!=value)")
	return cmd
}

func newResultsShowCommand(location *string) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "show RUN",
		Short: "Print a stored run's summary, as `cnibench run` does at its end",
		Long: `Prints the summary of a stored run: per target, path, workload and metric the number of
samples, median, mean, 95 % confidence interval, trimmed mean, outliers and fraction of the
host-network baseline. RUN is a run id or a unique prefix of one.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, "table", "json", "yaml"); err != nil {
				return err
			}
			b, err := loadRun(cmd.Context(), *location, args[0])
			if err != nil {
				return err
			}
			doc := report.NewDocument(b.Run, b.Targets, b.Samples)
			return report.Write(cmd.OutOrStdout(), output, doc)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table, json or yaml")
	return cmd
}

func newResultsDeleteCommand(location *string) *cobra.Command {
	return &cobra.Command{
		Use:   "delete RUN...",
		Short: "Delete stored runs with their targets and samples",
		Long: `Deletes runs, each named by its id or a unique prefix of one. Every argument is resolved
before anything is deleted, so a prefix that matches no run or several runs deletes nothing.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			db, err := store.OpenExisting(cmd.Context(), *location)
			if err != nil {
				return fmt.Errorf("--store: %w", err)
			}
			defer db.Close()
			var ids []string
			for _, arg := range args {
				r, err := db.Run(cmd.Context(), arg)
				if err != nil {
					return fmt.Errorf("nothing deleted: %w", err)
				}
				if !slices.Contains(ids, r.ID) {
					ids = append(ids, r.ID)
				}
			}
			for _, id := range ids {
				if err := db.DeleteRun(cmd.Context(), id); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "deleted run %s\n", id)
			}
			return nil
		},
	}
}

func newResultsExportCommand(location *string) *cobra.Command {
	var format, file string
	cmd := &cobra.Command{
		Use:   "export RUN",
		Short: "Export a stored run as CSV, JSON or OpenMetrics",
		Long: `Writes a stored run (id or unique prefix) to stdout or to a file (--file), in the format -o
names:
  csv          one row per sample and value: run, seq, round, warmup, target, path, workload,
               started, kind (metric|resource), name, value, error; every sample included
  json         the run, its targets with fingerprints, every sample with its raw tool output
  openmetrics  OpenMetrics text for Prometheus backfilling (promtool tsdb create-blocks-from
               openmetrics): one gauge per metric with a point per measured sample, and
               per-cell summary gauges (_mean, _median, _ci95_low, _ci95_high, _n)`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !validFormat(format, export.Formats()...) {
				return movedFileFlag(format, export.Formats()...)
			}
			b, err := loadRun(cmd.Context(), *location, args[0])
			if err != nil {
				return err
			}
			if file == "" || file == "-" {
				return export.Write(cmd.OutOrStdout(), format, b)
			}
			return writeFileAtomic(file, func(w io.Writer) error { return export.Write(w, format, b) })
		},
	}
	formatFlags(cmd, &format, export.FormatCSV, "export format: "+strings.Join(export.Formats(), ", "))
	cmd.Flags().StringVar(&file, "file", "", "write to this file instead of stdout")
	return cmd
}

// writeFileAtomic writes through a temporary file in the target's directory and renames it
// into place, so that a failed export never leaves a truncated file under the wanted name.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("--file %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // fails harmlessly once renamed
	if err := write(tmp); err != nil {
		_ = tmp.Close() // the write error is the one that matters
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("--file %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("--file %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("--file %s: %w", path, err)
	}
	return nil
}

func newResultsFlameGraphCommand(location *string) *cobra.Command {
	var o report.FlameGraphOptions
	var output, file string
	cmd := &cobra.Command{
		Use:   "flamegraph RUN",
		Short: "Write the flame graph of one profiled cell of a run (SVG, or folded stacks)",
		Long: `Writes where the host's CPU time went during one cell's measured samples of a run made with
--profile: an SVG flame graph that opens offline in any browser, or the folded stacks
(-o folded) that FlameGraph's and speedscope's tools read. Without --target, --path and
--workload the error lists the run's profiled cells.`,
		Example: "  cnibench results flamegraph 20261126-1430 --target flannel-vxlan --path cross-node --workload tcp-stream/1 --file vxlan.svg",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, "svg", "folded"); err != nil {
				return err
			}
			o.Folded = output == "folded"
			b, err := loadRun(cmd.Context(), *location, args[0])
			if err != nil {
				return err
			}
			doc := report.NewDocument(b.Run, b.Targets, b.Samples)
			write := func(w io.Writer) error { return flameGraphFlags(report.WriteFlameGraphOf(w, doc, o)) }
			if file == "" || file == "-" {
				return write(cmd.OutOrStdout())
			}
			return writeFileAtomic(file, write)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Target, "target", "", "the target of the cell")
	f.StringVar(&o.Path, "path", "", "the path of the cell, e.g. cross-node")
	f.StringVar(&o.Workload, "workload", "", "the workload of the cell as stored, e.g. tcp-stream/1")
	f.IntVar(&o.Pairs, "pairs", 1, "the pairs level of the cell")
	f.StringVarP(&output, "output", "o", "svg", "output format: svg or folded")
	f.StringVar(&file, "file", "", "write to this file instead of standard output")
	return cmd
}

// loadRun opens the existing store at location, loads one run (an id or a unique prefix of
// one) and closes the store again.
func loadRun(ctx context.Context, location, run string) (export.Bundle, error) {
	db, err := store.OpenExisting(ctx, location)
	if err != nil {
		return export.Bundle{}, &setting.Error{Name: "store", Err: err}
	}
	defer db.Close()
	return export.Load(ctx, db, run)
}

// flameGraphFlags names the cells of a refused flame graph by the flags that pick them, so
// that the user can paste one.
func flameGraphFlags(err error) error {
	var np *report.NoProfileError
	if !errors.As(err, &np) {
		return err
	}
	if len(np.Have) == 0 {
		return fmt.Errorf("run %s has no CPU profiles (run with --profile, or profile: true in the suite)", np.Run)
	}
	cell := func(c report.FlameGraphCell) string {
		return fmt.Sprintf("--target %q --path %q --workload %q --pairs %d", c.Target, c.Path, c.Workload, c.Pairs)
	}
	have := make([]string, len(np.Have))
	for i, c := range np.Have {
		have[i] = cell(c)
	}
	return fmt.Errorf("run %s has no profile of %s; it has:\n  %s", np.Run, cell(np.Want), strings.Join(have, "\n  "))
}
