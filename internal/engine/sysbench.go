package engine

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/internal/catalog"
)

// sysbench drives sysbench's memory test (Debian's 1.0.20, in the tools image) for the memory
// workload: sequential reads, then sequential writes, through a buffer larger than the
// last-level cache, each for half the sample. It reports bytes moved over wall-clock time, so
// N pods sharing the machine's memory bandwidth add up to what the machine gave them all.
// (stress-ng's stream stressor runs STREAM's kernels, but 0.15 reports a rate only after 4.5 s
// of kernel time per instance, which ten pods on two CPUs never reach in a sample.)
type sysbench struct{}

// NameSysbench is the sysbench engine's name.
const NameSysbench = "sysbench"

func (sysbench) Name() string { return NameSysbench }

func (sysbench) Supports(w Workload) bool { return w.Kind == Memory && w.validateShape() == nil }

// ServerArgv is nil: the memory workload has no server.
func (sysbench) ServerArgv(Workload, int) []string { return nil }

// ClientArgv runs the read pass, then the write pass. The total size is unbounded so that the
// time ends each pass; threads 0 means one per CPU, as nproc counts them in the pod.
func (sysbench) ClientArgv(w Workload, _ string, _ int) []string {
	half := max(1, wholeSeconds(w)/2)
	block := w.MessageSize
	if block == 0 {
		block = DefaultMemoryBlock
	}
	threads := strconv.Itoa(w.Threads)
	if w.Threads == 0 {
		threads = "$(nproc)"
	}
	pass := func(op string) string {
		return fmt.Sprintf("sysbench memory --threads=%s --time=%d --memory-block-size=%dK --memory-total-size=1000000G --memory-access-mode=seq --memory-oper=%s run",
			threads, half, block>>10, op)
	}
	return []string{"sh", "-c", pass("read") + " && " + pass("write")}
}

var (
	// "  operation: read"
	sysbenchOp = regexp.MustCompile(`(?m)^\s*operation: (read|write)\s*$`)
	// "16384.00 MiB transferred (5012.39 MiB/sec)"
	sysbenchRate = regexp.MustCompile(`(?m)^([\d.]+) MiB transferred \(([\d.]+) MiB/sec\)`)
)

// Parse reads both passes' rates, converted from MiB/s to MB/s.
func (sysbench) Parse(w Workload, stdout []byte) (Metrics, error) {
	ops := sysbenchOp.FindAllSubmatch(stdout, -1)
	rates := sysbenchRate.FindAllSubmatch(stdout, -1)
	if len(ops) != 2 || len(rates) != 2 {
		return nil, &ToolError{Engine: NameSysbench, Message: fmt.Sprintf("%s: expected a read and a write pass, found %d operations and %d rates: %s",
			w.ID(), len(ops), len(rates), lastLine(stdout))}
	}
	m := Metrics{}
	for i, op := range ops {
		v, err := strconv.ParseFloat(string(rates[i][2]), 64)
		if err != nil {
			return nil, fmt.Errorf("sysbench rate %q: %w", rates[i][2], err)
		}
		name := map[string]string{"read": catalog.MemoryRead, "write": catalog.MemoryWrite}[strings.TrimSpace(string(op[1]))]
		m[name] = v * (1 << 20) / 1e6
	}
	if len(m) != 2 {
		return nil, &ToolError{Engine: NameSysbench, Message: w.ID() + ": the passes were not one read and one write"}
	}
	return finite("sysbench rate", m)
}
