package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/cnibench/cnibench/internal/export"
	"github.com/cnibench/cnibench/internal/report"
	"github.com/spf13/cobra"
)

// reportOptions are the flags and arguments of `cnibench report`.
type reportOptions struct {
	location string   // --store
	output   string   // -o: the report file, "-" for stdout
	format   string   // --format: html or md; empty means from the extension of -o
	runs     []string // run ids or unique prefixes, in the order given
}

func newReportCommand() *cobra.Command {
	var o reportOptions
	cmd := &cobra.Command{
		Use:   "report RUN... -o FILE",
		Short: "Write stored runs as a self-contained HTML report with SVG charts, or as Markdown",
		Long: `Writes one report of one or more stored runs (ids or unique prefixes of ids).

HTML (-o report.html) is a single file that works offline and fetches nothing: the runs, the
environment fingerprint of every target, and per workload a chart of each headline metric
(mean by path and target, 95 % confidence-interval whiskers, n, fraction of the host-network
baseline), latency percentiles for tcp-rr/tcp-crr, CPU cost per unit of work, and a table of
n, median, mean, 95 % CI, trimmed mean, outliers and fraction of the baseline.

Markdown (-o report.md) holds the same figures as tables, for pasting into a review.

With several runs, each run's targets are kept apart and labelled RUN/TARGET.`,
		Example: `  cnibench report 20261121 -o report.html
  cnibench report RUN_A RUN_B -o compare.md
  cnibench report RUN -o - --format md`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.runs = args
			return o.run(cmd.Context(), cmd.OutOrStdout())
		},
	}
	storeFlags(cmd, &o.location, false)
	f := cmd.Flags()
	f.StringVarP(&o.output, "output", "o", "", "report file (.html or .md), or - for stdout with --format")
	f.StringVar(&o.format, "format", "", "html or md (default: from the extension of -o)")
	return cmd
}

// reportFormat decides the format from --format, else from the extension of -o, and names
// the flag to fix when it cannot.
func (o reportOptions) reportFormat() (string, error) {
	if o.output == "" {
		return "", fmt.Errorf("-o is required: the report file, e.g. -o report.html or -o report.md (- for stdout)")
	}
	switch strings.ToLower(o.format) {
	case "html", "htm":
		return "html", nil
	case "md", "markdown":
		return "md", nil
	case "":
	default:
		return "", fmt.Errorf("--format %q: expected html or md", o.format)
	}
	if o.output == "-" {
		return "", fmt.Errorf("-o -: writing to stdout needs --format html or --format md")
	}
	switch strings.ToLower(filepath.Ext(o.output)) {
	case ".html", ".htm":
		return "html", nil
	case ".md", ".markdown":
		return "md", nil
	}
	return "", fmt.Errorf("-o %s: cannot tell the format from the extension: name the file .html or .md, or add --format html|md", o.output)
}

// run loads the runs and writes the report; stdout gets the report for -o -, else a line
// saying where it went.
func (o reportOptions) run(ctx context.Context, stdout io.Writer) error {
	format, err := o.reportFormat()
	if err != nil {
		return err
	}
	db, err := export.OpenExisting(ctx, o.location)
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
		docs = append(docs, report.NewDocument(b.Run, b.Targets, b.Samples))
	}
	write := func(w io.Writer) error {
		if format == "md" {
			return report.WriteMarkdown(w, docs)
		}
		return report.WriteHTML(w, docs)
	}
	if o.output == "-" {
		return write(stdout)
	}
	if err := writeFileAtomic(o.output, write); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "wrote %s report of %d run(s) to %s\n", format, len(docs), o.output)
	return err
}
