// Package agent is the in-cluster side of cnibench, run inside the tools image as
// `cnibench agent ...`: an echo server and request/response clients (RR over one connection,
// CRR with a new connection per transaction, for which no packaged tool exists), and a probe
// that reports the node's CPU and memory counters.
package agent

import "github.com/cnibench/cnibench/internal/stats"

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
