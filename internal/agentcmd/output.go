package agentcmd

import (
	"github.com/cnibench/cnibench/internal/monitor"
	"github.com/cnibench/cnibench/internal/stats"
)

// What the agent's commands print, as the callers that exec them decode it: these types are
// the other half of each command's contract, so they live with its argv rather than with the
// agent's code, which the callers never compile.

// ReadyLine is what `cnibench agent run --barrier` prints on stderr once it waits at the
// barrier; the caller releases it by writing a line to its stdin.
const ReadyLine = "cnibench-ready"

// Outcomes of a connection probe.
const (
	ProbeOpen    = "open"    // the handshake completed: something listens and the path admits it
	ProbeRefused = "refused" // a RST came back: the path delivers, nothing listens
	ProbeTimeout = "timeout" // nothing came back: the SYN was dropped on the way, e.g. by a policy
	// ProbeUnreachable: the host said no route leads there. Cilium's socket load balancer
	// answers a ClusterIP without endpoints so: for a Service being programmed it is "not
	// yet", as refused is for kube-proxy.
	ProbeUnreachable = "unreachable"
	// ProbeRejected: a program at the socket layer refused the connect (EPERM). Calico's eBPF
	// connect-time load balancer answers a ClusterIP without endpoints so: "not yet" too.
	ProbeRejected = "rejected"
)

// ProbeResult is what `cnibench agent probe` prints.
type ProbeResult struct {
	Outcome string `json:"outcome"`
}

// WatchResult is what `cnibench agent probe --until` prints: when the awaited outcome began,
// on this node's clock.
type WatchResult struct {
	Outcome string `json:"outcome"`
	// FirstNS is the start (Unix ns) of the first attempt that ended with the awaited outcome;
	// the change happened between the attempt before it and this one.
	FirstNS int64 `json:"first_ns"`
	// StartNS is the start of the first attempt: when the probing began.
	StartNS  int64 `json:"start_ns"`
	Attempts int   `json:"attempts"`
	// ResolutionNS is the interval between attempts.
	ResolutionNS int64 `json:"resolution_ns"`
}

// RunReport is what `cnibench agent run` prints as JSON.
type RunReport struct {
	// StartNS and EndNS are the node's wall clock (Unix ns) when the tool was started and
	// when it exited: the start times of the clients of one sample give its skew.
	StartNS int64 `json:"start_ns"`
	EndNS   int64 `json:"end_ns"`
	// ExitCode is the tool's exit status (-1 when killed by a signal).
	ExitCode int    `json:"exit_code"`
	Stdout   string `json:"stdout"`
	// Stderr is the tool's standard error, its last 4 KiB.
	Stderr    string      `json:"stderr,omitempty"`
	Histogram *stats.Hist `json:"histogram_us,omitempty"`
	// Window holds the node's and this container's counters read right before the tool
	// started and right after it exited: the sample's measured window, without the execs
	// and API calls around it. Nil when they could not be read.
	Window *Window `json:"window,omitempty"`
}

// Window is a pair of counter readings around a tool's run.
type Window struct {
	Before monitor.NodeStat `json:"before"`
	After  monitor.NodeStat `json:"after"`
	// AwakeSeconds is the CPU time the keep-awake spinners used (in this container, on the
	// node): not the sample's work. AwakePolicy is their scheduling class, empty without.
	AwakeSeconds float64 `json:"awake_s,omitempty"`
	AwakePolicy  string  `json:"awake_policy,omitempty"`
}

// Result is what the rr and crr clients print as JSON on stdout.
type Result struct {
	Tool         string    `json:"tool"`          // always "cnibench"
	Mode         string    `json:"mode"`          // "rr" or "crr"
	DurationSec  float64   `json:"duration_s"`    // measured wall time of the loop
	Transactions int64     `json:"transactions"`  // completed request/response exchanges
	Errors       int64     `json:"errors"`        // failed connects, reads or writes
	RatePerSec   float64   `json:"rate_per_s"`    // Transactions / DurationSec
	MessageSize  int       `json:"message_bytes"` // request and response size
	LatencyUsec  Latencies `json:"latency_us"`    // per transaction, connect included for crr
	// Histogram holds every transaction's latency in µs, bucketed, so that the latencies of
	// several concurrent clients merge into percentiles of all of them.
	Histogram *stats.Hist `json:"histogram_us,omitempty"`

	Target     string           `json:"target"`                // --target as given
	Address    string           `json:"address"`               // what was dialled: the target resolved once, and the port
	ErrorKinds map[string]int64 `json:"error_kinds,omitempty"` // Errors by "<phase>_<reason>", e.g. "dial_eaddrnotavail"
	LastError  string           `json:"last_error,omitempty"`  // the last error's text, for the log
	Warnings   []string         `json:"warnings,omitempty"`    // conditions that make the numbers suspect (port exhaustion)
}

// Latencies summarises per-transaction latencies in microseconds.
type Latencies struct {
	Min  float64 `json:"min"`
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
}
