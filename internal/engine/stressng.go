package engine

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/internal/catalog"
)

// Compute workload limits.
const (
	// MaxThreads bounds the cpu and memory workers of one pod.
	MaxThreads = 256
	// DefaultMemoryBlock is the buffer the memory workload streams through when the workload
	// sets no size: beyond this kind of machine's 36 MiB L3, so the figure is memory's, while
	// forty concurrent pods still fit in RAM.
	DefaultMemoryBlock = 64 << 20
	minMemoryBlock     = 1 << 20
	maxMemoryBlock     = 1 << 30
)

// validateInPod checks what the in-pod kinds share: workers, no streams, no rate.
func (w Workload) validateInPod() error {
	if w.Threads < 0 || w.Threads > MaxThreads {
		return fmt.Errorf("threads: expected 0 (one per CPU) to %d, got %d", MaxThreads, w.Threads)
	}
	if w.Streams != 0 && w.Streams != 1 {
		return fmt.Errorf("streams: expected 0 or 1 for %s (use threads), got %d", w.Kind, w.Streams)
	}
	if w.Rate != "" {
		return fmt.Errorf("rate: expected empty for %s, got %q", w.Kind, w.Rate)
	}
	return nil
}

// validateCompute checks a cpu or memory workload.
func (w Workload) validateCompute() error {
	if err := w.validateInPod(); err != nil {
		return err
	}
	if w.Kind == CPU && w.MessageSize != 0 {
		return fmt.Errorf("size: expected 0 for %s, got %d", w.Kind, w.MessageSize)
	}
	if w.Kind == Memory && w.MessageSize != 0 && (w.MessageSize < minMemoryBlock || w.MessageSize > maxMemoryBlock) {
		return fmt.Errorf("size: expected 0 (%s) or %s-%s, the buffer each worker streams through, got %d",
			formatSize(DefaultMemoryBlock), formatSize(minMemoryBlock), formatSize(maxMemoryBlock), w.MessageSize)
	}
	return nil
}

// computeID is the ID of a valid cpu, memory or stream workload: KIND/THREADS[xSIZE], THREADS
// "all" for one worker per CPU.
func (w Workload) computeID() string {
	threads := "all"
	if w.Threads > 0 {
		threads = strconv.Itoa(w.Threads)
	}
	if w.MessageSize != 0 { // memory's buffer, stream's arrays (a cpu workload has none)
		return fmt.Sprintf("%s/%sx%s", w.Kind, threads, formatSize(w.MessageSize))
	}
	return w.Kind + "/" + threads
}

// parseComputeID reverses computeID.
func parseComputeID(kind, params string) (Workload, error) {
	w := Workload{Kind: kind, Streams: 1}
	threads, size, hasSize := strings.Cut(params, "x")
	if threads != "all" {
		n, err := parseCount(threads)
		if err != nil {
			return Workload{}, fmt.Errorf("threads: %w", err)
		}
		w.Threads = n
	}
	if hasSize {
		n, err := parseSize(size)
		if err != nil {
			return Workload{}, fmt.Errorf("size: %w", err)
		}
		w.MessageSize = n
	}
	return w, nil
}

// stressNG drives stress-ng (Debian's, in the tools image) for the cpu workload.
type stressNG struct{}

func (stressNG) Name() string { return NameStressNG }

func (stressNG) Supports(w Workload) bool { return w.Kind == CPU && w.validateShape() == nil }

// ServerArgv is nil: compute workloads have no server.
func (stressNG) ServerArgv(Workload, int) []string { return nil }

// ClientArgv runs the cpu stressor for the sample's duration. stress-ng prints its metrics on
// stderr, which the shell folds into stdout for Parse. The method is fixed (matrixprod) so
// that every sample does the same work: the default cycles through methods of very different
// cost.
func (stressNG) ClientArgv(w Workload, _ string, _ int) []string {
	secs := strconv.Itoa(wholeSeconds(w))
	return []string{"sh", "-c", "stress-ng --metrics -t " + secs + "s --cpu " + strconv.Itoa(w.Threads) + " --cpu-method matrixprod 2>&1"}
}

// "stress-ng: metrc: [12] cpu   3314   2.00   1.98   0.00   1655.74   1670.26 ..."
var bogoLine = regexp.MustCompile(`metrc: \[\d+\] +cpu +(\d+) +([\d.]+) +([\d.]+) +([\d.]+) +([\d.]+)`)

// Parse reads the cpu stressor's bogo operations per wall-clock second.
func (stressNG) Parse(w Workload, stdout []byte) (Metrics, error) {
	g := bogoLine.FindSubmatch(stdout)
	if g == nil {
		return nil, &ToolError{Engine: NameStressNG, Message: fmt.Sprintf("%s: no cpu metrics line in its output: %s", w.ID(), lastLine(stdout))}
	}
	v, err := strconv.ParseFloat(string(g[5]), 64)
	if err != nil {
		return nil, fmt.Errorf("stress-ng cpu rate %q: %w", g[5], err)
	}
	return Metrics{catalog.CPUOps: v}, nil
}

// lastLine is the last non-empty line of a tool's output, for an error message.
func lastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
