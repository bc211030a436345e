package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cnibench/cnibench/internal/agentcmd"
	"github.com/cnibench/cnibench/internal/stats"
)

// cnibench drives the in-house agent shipped in the tools image (`cnibench agent ...`):
// an echo server, and rr/crr clients that print one agentcmd.Result as JSON. It measures
// tcp-crr, for which no packaged tool exists, and tcp-rr of any size (sockperf's
// minimum is 14 bytes; For sends smaller tcp-rr here), also usable to cross-check
// sockperf via ByName. Latencies are full round trips, connect included for crr.
type cnibench struct{}

// Name implements Engine.
func (cnibench) Name() string { return NameCnibench }

// Supports implements Engine: tcp-rr and tcp-crr.
func (cnibench) Supports(w Workload) bool {
	return (w.Kind == TCPRR || w.Kind == TCPCRR) && w.validateShape() == nil
}

// ServerArgv implements Engine:
//
//	cnibench agent echo-server --port PORT --size SIZE [--close-after-reply]  (the latter for tcp-crr)
//
// For tcp-crr the server closes each connection after its reply and the client waits for
// that: TIME_WAIT stays on the server, so the client's ports never run out, on any node
// whose sysctls cnibench cannot change (agent.CRR explains why the baseline needs it).
func (cnibench) ServerArgv(w Workload, port int) []string {
	return agentcmd.EchoServerCmd{Port: port, Size: w.MessageSize, CloseAfterReply: w.Kind == TCPCRR}.Argv()
}

// ServerClosesFirst reports whether the server closes each connection first: for tcp-crr.
func (cnibench) ServerClosesFirst(w Workload) bool { return w.Kind == TCPCRR }

// ClientArgv implements Engine:
//
//	cnibench agent crr --target TARGET --port PORT --duration 5s --size SIZE --server-closes  (tcp-crr)
//	cnibench agent rr  --target TARGET --port PORT --duration 5s --size SIZE  (tcp-rr)
//
// TARGET is passed verbatim (IPv4, bare IPv6 such as fd00::1, or a DNS name); the
// duration is a Go duration string.
func (cnibench) ClientArgv(w Workload, target string, port int) []string {
	return agentcmd.ClientCmd{NewConnections: w.Kind == TCPCRR, Target: target, Port: port, Size: w.MessageSize,
		Duration: w.Duration, ServerCloses: w.Kind == TCPCRR}.Argv()
}

// Parse implements Engine: rate_per_s becomes connections_per_s (crr) or
// transactions_per_s (rr); latency_us gives the latency metrics. A sample with errors
// and no completed transaction is a *ToolError; errors alongside completed
// transactions are tolerated (they lower the rate).
func (cnibench) Parse(w Workload, stdout []byte) (Metrics, error) {
	trimmed := bytes.TrimSpace(stdout)
	if len(trimmed) == 0 {
		return nil, errors.New("cnibench agent output: empty stdout")
	}
	var r agentcmd.Result
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("cnibench agent output: decoding JSON (%q): %w", excerpt(trimmed), jsonPlace(err))
	}
	wantMode, rateMetric := "crr", MetricConnectionRate
	if w.Kind == TCPRR {
		wantMode, rateMetric = "rr", MetricTransactionRate
	}
	if r.Mode != wantMode {
		return nil, fmt.Errorf("cnibench agent output: mode: expected %q for %s, got %q", wantMode, w.Kind, r.Mode)
	}
	if r.Transactions <= 0 {
		if r.Errors > 0 {
			return nil, &ToolError{Engine: NameCnibench,
				Message: fmt.Sprintf("%s: all attempts failed (%d errors, 0 transactions in %.3f s)", r.Mode, r.Errors, r.DurationSec)}
		}
		return nil, fmt.Errorf("cnibench agent output: transactions: expected > 0, got %d", r.Transactions)
	}
	if r.DurationSec <= 0 || r.RatePerSec <= 0 {
		return nil, fmt.Errorf("cnibench agent output: duration_s and rate_per_s: expected > 0, got %v and %v", r.DurationSec, r.RatePerSec)
	}
	return finite("cnibench agent output", Metrics{
		rateMetric:        r.RatePerSec,
		MetricLatencyMean: r.LatencyUsec.Mean,
		MetricLatencyP50:  r.LatencyUsec.P50,
		MetricLatencyP90:  r.LatencyUsec.P90,
		MetricLatencyP99:  r.LatencyUsec.P99,
		MetricErrors:      float64(r.Errors),
	})
}

// Histogram implements HistogramSource: the agent's rr and crr clients bucket every latency.
func (cnibench) Histogram(stdout []byte) (*stats.Hist, error) {
	var r agentcmd.Result
	if err := json.Unmarshal(bytes.TrimSpace(stdout), &r); err != nil {
		return nil, fmt.Errorf("cnibench agent output: %w", jsonPlace(err))
	}
	return r.Histogram, nil
}
