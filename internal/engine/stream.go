package engine

import (
	"fmt"
	"regexp"
	"strconv"

	"github.com/cnibench/cnibench/internal/catalog"
)

// Stream is memory bandwidth inside one pod as STREAM measures it: its copy, scale, add and
// triad kernels over arrays beyond the last-level cache, the best rate of each.
const Stream = "stream"

// NameStream is the STREAM engine's name.
const NameStream = "stream"

// STREAM limits.
const (
	// DefaultStreamArray is each array's size when the workload sets none: STREAM's rule is
	// four times the last-level cache, and this kind of machine has 32 MiB. An add or triad
	// holds three arrays at once (384 MiB a pod).
	DefaultStreamArray = 128 << 20
	minStreamArray     = 1 << 20
	maxStreamArray     = 1 << 30
	// streamRuns is the iterations of each kernel per invocation, STREAM's own NTIMES; the first
	// is a warm-up the rate leaves out.
	streamRuns = 10
)

// validateStream checks a stream workload: threads, and the size of each array.
func (w Workload) validateStream() error {
	if err := w.validateInPod(); err != nil {
		return err
	}
	if w.MessageSize != 0 && (w.MessageSize < minStreamArray || w.MessageSize > maxStreamArray) {
		return fmt.Errorf("size: expected 0 (%s) or %s-%s, the size of each of STREAM's arrays, got %d",
			formatSize(DefaultStreamArray), formatSize(minStreamArray), formatSize(maxStreamArray), w.MessageSize)
	}
	return nil
}

// stream drives the STREAM benchmark (stream-benchmark from crates.io, in the tools image) for
// the stream workload. One invocation runs every kernel streamRuns times; the sample repeats
// invocations until its duration has passed (at least one), and each kernel's figure is its
// best rate over them, as STREAM reports the best of its iterations.
type stream struct{}

func (stream) Name() string { return NameStream }

func (stream) Supports(w Workload) bool { return w.Kind == Stream && w.validateShape() == nil }

// ServerArgv is nil: the stream workload has no server.
func (stream) ServerArgv(Workload, int) []string { return nil }

// ClientArgv runs STREAM over arrays of the workload's size (in 8-byte elements) with one rayon
// worker per thread (per CPU for 0), invocation after invocation for the sample's duration.
func (stream) ClientArgv(w Workload, _ string, _ int) []string {
	size := w.MessageSize
	if size == 0 {
		size = DefaultStreamArray
	}
	env := ""
	if w.Threads > 0 {
		env = "RAYON_NUM_THREADS=" + strconv.Itoa(w.Threads) + " "
	}
	script := fmt.Sprintf("end=$(($(date +%%s) + %d)); while :; do %sstream --size %d --runs %d || exit 1; [ $(date +%%s) -lt $end ] || break; done",
		wholeSeconds(w), env, size/8, streamRuns)
	return []string{"sh", "-c", script}
}

// "Copy 268.4 MB rate 11.6 GB/s | time min 23.1ms avg 24.0ms max 26.3ms"
var streamLine = regexp.MustCompile(`(?m)^(Copy|Scale|Add|Triad) .* rate ([\d.]+) ?(bytes|[KMGTP]B)/s`)

// streamMetric names a kernel's figure ("" for a kernel the workload does not report).
func streamMetric(kernel string) string {
	switch kernel {
	case "Copy":
		return catalog.StreamCopy
	case "Scale":
		return catalog.StreamScale
	case "Add":
		return catalog.StreamAdd
	case "Triad":
		return catalog.StreamTriad
	}
	return ""
}

// streamUnit is a decimal unit STREAM's rates print in, in MB.
func streamUnit(unit string) float64 {
	switch unit {
	case "bytes":
		return 1e-6
	case "KB":
		return 1e-3
	case "GB":
		return 1e3
	case "TB":
		return 1e6
	case "PB":
		return 1e9
	}
	return 1 // MB
}

// Parse reads the best rate of each kernel over the sample's invocations, in MB/s.
func (stream) Parse(w Workload, stdout []byte) (Metrics, error) {
	m := Metrics{}
	for _, g := range streamLine.FindAllSubmatch(stdout, -1) {
		v, err := strconv.ParseFloat(string(g[2]), 64)
		if err != nil {
			return nil, fmt.Errorf("STREAM rate %q: %w", g[2], err)
		}
		name := streamMetric(string(g[1]))
		m[name] = max(m[name], v*streamUnit(string(g[3])))
	}
	if len(m) != 4 {
		return nil, &ToolError{Engine: NameStream, Message: fmt.Sprintf("%s: expected the copy, scale, add and triad rates, found %d: %s", w.ID(), len(m), lastLine(stdout))}
	}
	return finite("STREAM rate", m)
}
