package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/cnibench/cnibench/internal/export"
	"github.com/cnibench/cnibench/internal/history"
	"github.com/cnibench/cnibench/internal/label"
	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/report"
	"github.com/cnibench/cnibench/internal/store"
	"github.com/spf13/cobra"
)

// reportOptions are the flags and arguments of `cnibench report`.
type reportOptions struct {
	location string   // --store
	file     string   // --file: the report file, "-" for stdout
	format   string   // -o: html or md; empty means from the extension of --file
	runs     []string // run ids or unique prefixes, in the order given
	history  string   // --history: the label selector of the runs the history charts follow
	noHist   bool     // --no-history
}

func newReportCommand() *cobra.Command {
	var o reportOptions
	cmd := &cobra.Command{
		Use:   "report RUN... --file FILE",
		Short: "Write stored runs as a self-contained HTML report with SVG charts, or as Markdown",
		Long: `Writes one report of one or more stored runs (ids or unique prefixes of ids).

HTML (--file report.html) is a single file that works offline and fetches nothing: the runs,
the environment fingerprint of every target, and per workload a chart of each headline metric
(mean by path and target, 95 % confidence-interval whiskers, n, fraction of the host-network
baseline), latency percentiles for tcp-rr/tcp-crr, CPU cost per unit of work, and a table of
n, median, mean, 95 % CI, trimmed mean, outliers and fraction of the baseline.

Markdown (--file report.md) holds the same figures as tables, for pasting into a review.

-o is the format, as in every command; by default the file's extension says it.

With several runs, each run's targets are kept apart and labelled RUN/TARGET.`,
		Example: `  cnibench report 20261121 --file report.html
  cnibench report RUN_A RUN_B --file compare.md
  cnibench report RUN --file - -o md`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.runs = args
			return o.run(cmd.Context(), cmd.OutOrStdout())
		},
	}
	storeFlags(cmd, &o.location, false)
	f := cmd.Flags()
	f.StringVar(&o.file, "file", "", "report file (.html or .md), or - for stdout with -o")
	f.StringVar(&o.history, "history", "", "HTML: chart each cell over the stored runs up to the run whose labels match this selector, e.g. branch=main (default: every complete run)")
	f.BoolVar(&o.noHist, "no-history", false, "HTML: no history charts")
	formatFlags(cmd, &o.format, "", "html or md (default: from the extension of --file)")
	return cmd
}

// formatFlags binds -o, the output format, and --format, its former name in the commands that
// write files, kept as a hidden alias: cobra prints a deprecation to stdout, which would
// corrupt an export written there.
func formatFlags(cmd *cobra.Command, format *string, def, usage string) {
	f := cmd.Flags()
	f.StringVarP(format, "output", "o", def, usage)
	f.StringVar(format, "format", def, usage)
	_ = f.MarkHidden("format")
}

// movedFileFlag explains a file name given to -o, where these commands took the file before
// -o became the format in every command.
func movedFileFlag(format string, formats ...string) error {
	if strings.ContainsAny(format, "./") {
		return fmt.Errorf("-o %q: -o is the format (%s); the file goes in --file %s", format, strings.Join(formats, ", "), format)
	}
	return fmt.Errorf("-o %q: expected %s", format, strings.Join(formats, ", "))
}

// reportFormat decides the format from -o, else from the extension of --file, and names the
// flag to fix when it cannot.
func (o reportOptions) reportFormat() (string, error) {
	format := ""
	switch strings.ToLower(o.format) {
	case "html", "htm":
		format = "html"
	case "md", "markdown":
		format = "md"
	case "":
	default:
		return "", movedFileFlag(o.format, "html", "md")
	}
	switch {
	case o.file == "":
		return "", fmt.Errorf("--file is required: the report file, e.g. --file report.html or --file report.md (- for stdout)")
	case format != "":
		return format, nil
	case o.file == "-":
		return "", fmt.Errorf("--file -: writing to stdout needs -o html or -o md")
	}
	switch strings.ToLower(filepath.Ext(o.file)) {
	case ".html", ".htm":
		return "html", nil
	case ".md", ".markdown":
		return "md", nil
	}
	return "", fmt.Errorf("--file %s: cannot tell the format from the extension: name the file .html or .md, or add -o html|md", o.file)
}

// run loads the runs and writes the report; stdout gets the report for --file -, else a line
// saying where it went.
func (o reportOptions) run(ctx context.Context, stdout io.Writer) error {
	format, err := o.reportFormat()
	if err != nil {
		return err
	}
	sel, err := label.ParseSelector(o.history)
	if err != nil {
		return fmt.Errorf("--history: %w", err)
	}
	db, err := store.OpenExisting(ctx, o.location)
	if err != nil {
		return fmt.Errorf("--store: %w", err)
	}
	defer db.Close()
	var docs []report.Document
	seen := map[string]bool{}
	for _, arg := range o.runs {
		b, err := export.Load(ctx, db, arg)
		if err != nil {
			return fmt.Errorf("report: %w", err)
		}
		if seen[b.Run.ID] { // two prefixes of one run: report it once
			continue
		}
		seen[b.Run.ID] = true
		doc := report.NewDocument(b.Run, b.Targets, b.Samples)
		if format == "html" && !o.noHist {
			if doc.History, err = history.ForRun(ctx, db, b.Run, targetNames(b.Targets), sel); err != nil {
				return fmt.Errorf("report: history: %w", err)
			}
		}
		docs = append(docs, doc)
	}
	write := func(w io.Writer) error {
		if format == "md" {
			return report.WriteMarkdown(w, docs)
		}
		return report.WriteHTML(w, docs)
	}
	if o.file == "-" {
		return write(stdout)
	}
	if err := writeFileAtomic(o.file, write); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "wrote %s report of %d run(s) to %s\n", format, len(docs), o.file)
	return err
}

func targetNames(targets []record.Target) []string {
	names := make([]string, len(targets))
	for i, t := range targets {
		names[i] = t.Name
	}
	return names
}
