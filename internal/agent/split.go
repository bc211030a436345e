package agent

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/cnibench/cnibench/internal/split"
)

// SplitOptions is one sample of a Gateway API split, run where k6 is installed (the tools
// image of a local cluster that has the split).
type SplitOptions struct {
	Script  split.ScriptOptions
	Summary split.SummaryOptions
}

// Split writes the k6 script, runs k6 and returns the summary of its output. k6's CSV can
// reach hundreds of megabytes at a thousand virtual users: it stays in a temporary directory,
// read once as a stream, and only the summary leaves the pod.
func Split(ctx context.Context, o SplitOptions) (split.Summary, error) {
	if err := o.Script.Validate(); err != nil {
		return split.Summary{}, err
	}
	if err := o.Summary.Validate(); err != nil {
		return split.Summary{}, err
	}
	dir, err := os.MkdirTemp("", "cnibench-split-")
	if err != nil {
		return split.Summary{}, err
	}
	defer os.RemoveAll(dir)
	script, csvPath := filepath.Join(dir, "split.js"), filepath.Join(dir, "k6.csv")
	if err := os.WriteFile(script, []byte(split.Script(o.Script)), 0o644); err != nil {
		return split.Summary{}, err
	}
	argv := split.Argv(script, csvPath)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), split.Env()...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return split.Summary{}, fmt.Errorf("k6: %w: %s", err, lastLines(out.String(), 10))
	}
	f, err := os.Open(csvPath)
	if err != nil {
		return split.Summary{}, fmt.Errorf("k6 wrote no output: %w: %s", err, lastLines(out.String(), 10))
	}
	defer f.Close()
	return split.Summarize(f, o.Summary)
}

// lastLines is the end of a tool's output, for an error message.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
