package engine

// Metric names emitted by the engines.
const (
	// MetricThroughput is receiver-side goodput in Gbit/s (tcp-stream, udp-stream).
	MetricThroughput = "throughput_gbps"
	// MetricRetransmits is the TCP retransmitted segment count on the sender (tcp-stream).
	MetricRetransmits = "retransmits"
	// MetricLoss is UDP datagrams lost / sent * 100 (udp-stream).
	MetricLoss = "loss_pct"
	// MetricJitter is UDP inter-arrival jitter in ms as measured by the receiver (udp-stream).
	MetricJitter = "jitter_ms"
	// MetricPacketRate is UDP datagrams received per second (udp-stream).
	MetricPacketRate = "packets_per_s"
	// MetricLatencyMean is the mean request/response round-trip time in µs (tcp-rr, tcp-crr).
	MetricLatencyMean = "latency_mean_us"
	// MetricLatencyP50 is the median round-trip time in µs (tcp-rr, tcp-crr).
	MetricLatencyP50 = "latency_p50_us"
	// MetricLatencyP90 is the 90th percentile round-trip time in µs (tcp-rr, tcp-crr).
	MetricLatencyP90 = "latency_p90_us"
	// MetricLatencyP99 is the 99th percentile round-trip time in µs (tcp-rr, tcp-crr).
	MetricLatencyP99 = "latency_p99_us"
	// MetricTransactionRate is request/response exchanges per second (tcp-rr).
	MetricTransactionRate = "transactions_per_s"
	// MetricConnectionRate is connect+request+response+close cycles per second (tcp-crr).
	MetricConnectionRate = "connections_per_s"
	// MetricErrors counts failed connects, reads and writes of the in-house rr/crr clients:
	// a CRR client that runs out of ephemeral ports measures exhaustion, not the datapath.
	MetricErrors = "errors"
	// MetricSenderCPU is the sending iperf3 process's CPU use in % of one core.
	MetricSenderCPU = "sender_cpu_pct"
	// MetricReceiverCPU is the receiving iperf3 process's CPU use in % of one core.
	MetricReceiverCPU = "receiver_cpu_pct"
)

// MetricSpec is the metadata of one metric.
type MetricSpec struct {
	Name           string // as in Metrics, e.g. "throughput_gbps"
	Unit           string // short unit for table headers, e.g. "Gbit/s"
	Description    string // one sentence, for help output and reports
	HigherIsBetter bool   // direction of improvement, for comparisons
}

// metricSpecs returns the metadata of every metric, keyed by name.
func metricSpecs() map[string]MetricSpec {
	specs := []MetricSpec{
		{MetricThroughput, "Gbit/s", "Goodput measured by the receiver (payload bits per second, all streams).", true},
		{MetricRetransmits, "segments", "TCP segments retransmitted by the sender over the sample (all streams).", false},
		{MetricLoss, "%", "UDP datagrams lost in transit: lost / sent * 100.", false},
		{MetricJitter, "ms", "UDP inter-arrival jitter measured by the receiver (RFC 3550 smoothed).", false},
		{MetricPacketRate, "pkt/s", "UDP datagrams received per second.", true},
		{MetricLatencyMean, "µs", "Mean round-trip time of one request/response (connect included for tcp-crr).", false},
		{MetricLatencyP50, "µs", "Median round-trip time of one request/response (connect included for tcp-crr).", false},
		{MetricLatencyP90, "µs", "90th percentile round-trip time of one request/response (connect included for tcp-crr).", false},
		{MetricLatencyP99, "µs", "99th percentile round-trip time of one request/response (connect included for tcp-crr).", false},
		{MetricTransactionRate, "trans/s", "Request/response exchanges per second over one connection.", true},
		{MetricConnectionRate, "conn/s", "Connect, request/response, close cycles per second.", true},
		{MetricErrors, "errors", "Failed connects, reads or writes of the in-house request/response client.", false},
		{MetricSenderCPU, "%", "CPU time (user+system) of the sending iperf3 process, in % of one core.", false},
		{MetricReceiverCPU, "%", "CPU time (user+system) of the receiving iperf3 process, in % of one core.", false},
	}
	m := make(map[string]MetricSpec, len(specs))
	for _, s := range specs {
		m[s.Name] = s
	}
	return m
}

// Metric returns the metadata of a metric name any engine emits.
func Metric(name string) (MetricSpec, bool) {
	s, ok := metricSpecs()[name]
	return s, ok
}

// MetricsFor returns the metric names a workload kind yields, in display order (nil for
// an unknown kind). The CPU metrics are emitted only when iperf3 reports them, which
// iperf3 3.12 always does.
func MetricsFor(kind string) []string {
	latency := []string{MetricLatencyMean, MetricLatencyP50, MetricLatencyP90, MetricLatencyP99}
	switch kind {
	case TCPStream:
		return []string{MetricThroughput, MetricRetransmits, MetricSenderCPU, MetricReceiverCPU}
	case UDPStream:
		return []string{MetricThroughput, MetricPacketRate, MetricLoss, MetricJitter, MetricSenderCPU, MetricReceiverCPU}
	case TCPRR:
		return append([]string{MetricTransactionRate}, latency...)
	case TCPCRR:
		return append([]string{MetricConnectionRate}, latency...)
	}
	return nil
}
