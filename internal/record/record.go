// Package record holds what the results store keeps, as plain values: runs, the targets
// (clusters) each run measured with their fingerprints, the samples taken, and the cell a
// sample sits in. Everything that reads stored runs (summaries, reports, exports,
// comparisons, history) works on these values alone; the store (internal/store) reads and
// writes them with its SQLite and PostgreSQL drivers, which their readers so never compile.
package record

import (
	"fmt"
	"strconv"
	"time"
)

// Run status values.
const (
	StatusRunning  = "running"
	StatusComplete = "complete"
	StatusPartial  = "partial"
	StatusFailed   = "failed"
)

// Run is one cnibench invocation.
type Run struct {
	ID       string    // short unique id, see NewRunID
	Started  time.Time // stored in UTC
	Finished time.Time // zero while running
	Status   string    // one of the Status constants
	Suite    string    // the effective suite as YAML
	Seed     int64     // shuffle seed
	Version  string    // cnibench version
	Note     string    // free text, e.g. the error of a failed run
	// Owner is the process writing the run, recorded so that a killed run can be recognised;
	// zero for runs stored before owners were, or written elsewhere (an import).
	Owner Owner
	// Labels are key=value pairs given to the run (commit, branch, CNI version...), to select
	// runs by (label.Selector); nil when none.
	Labels map[string]string
}

// Target is a cluster measured by a run.
type Target struct {
	RunID string
	Name  string
	// Fingerprint describes the environment: Kubernetes version, kernel, CNI and its mode,
	// kube-proxy mode, runtime handler, pod MTU, offloads and so on. Nil when empty.
	Fingerprint map[string]string
}

// Sample is one execution of a workload over a path of a target. Its Target must have been
// added to the run (AddTarget) before the sample is.
type Sample struct {
	RunID    string
	Seq      int  // order of execution within the run, unique per run
	Round    int  // 0 is the warm-up round
	Warmup   bool // the sample is not part of the results
	Target   string
	Path     string
	Workload string // workload id, e.g. "tcp-stream/4"
	// Pairs is how many client/server pairs ran the workload at once (0 is stored as 1).
	Pairs     int
	Started   time.Time
	Duration  time.Duration
	Metrics   map[string]float64 // nil when none; values must be finite (-0 is stored as 0)
	Resources map[string]float64 // e.g. node_cpu_pct, cpu_seconds, cpu_s_per_gb; nil when none
	Raw       string             // the tool's raw output, e.g. iperf3 JSON; any bytes, kept as they are
	Error     string             // set when the sample failed (Metrics then empty); NUL and invalid UTF-8 become U+FFFD
	// Flags name conditions that make the sample suspect, e.g. FlagSkew; each a word.
	Flags []string
	// Profile is where the host's CPU time went during the measured window, as folded stacks
	// (internal/profile), for runs that asked for it; "" when none was recorded. Lines starting
	// with "#" say how it was recorded, or why it could not be.
	Profile string
}

// Sample flags.
const (
	// FlagSkew marks a sample whose pairs started further apart than 5 % of its duration.
	FlagSkew = "start-skew"
)

// Cell is where a sample sits in the run's matrix: every dimension but the round. Summaries,
// rankings, comparisons and exports group samples by it.
type Cell struct {
	Target   string
	Path     string
	Workload string
	Pairs    int
}

// SetupPath is the path of the samples that time how a target was set up: the pods, the
// Service and the NetworkPolicy a run creates.
const SetupPath = "setup"

// Block names the moment of the machine the sample was measured in, its run's round: every
// target and path of a round saw it, so comparisons pair their values by it.
func (s Sample) Block() string { return fmt.Sprintf("%s/%d", s.RunID, s.Round) }

// Cell returns the sample's coordinates; a sample of an old run without pairs has one.
func (s Sample) Cell() Cell {
	return Cell{Target: s.Target, Path: s.Path, Workload: s.Workload, Pairs: max(s.Pairs, 1)}
}

// WorkloadLabel is the workload with its concurrency, as tables show it: "tcp-stream/1" for one
// pair, "tcp-stream/1 x10" for ten.
func (c Cell) WorkloadLabel() string {
	if c.Pairs <= 1 {
		return c.Workload
	}
	return c.Workload + " x" + strconv.Itoa(c.Pairs)
}
