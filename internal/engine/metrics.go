package engine

import "github.com/cnibench/cnibench/internal/catalog"

// Metric names emitted by the engines; their metadata (unit, direction) lives in
// internal/catalog.
const (
	MetricThroughput      = catalog.Throughput
	MetricRetransmits     = catalog.Retransmits
	MetricLoss            = catalog.Loss
	MetricJitter          = catalog.Jitter
	MetricPacketRate      = catalog.PacketRate
	MetricLatencyMean     = catalog.LatencyMean
	MetricLatencyP50      = catalog.LatencyP50
	MetricLatencyP90      = catalog.LatencyP90
	MetricLatencyP99      = catalog.LatencyP99
	MetricTransactionRate = catalog.TransactionRate
	MetricConnectionRate  = catalog.ConnectionRate
	MetricErrors          = catalog.Errors
	MetricSenderCPU       = catalog.SenderCPU
	MetricReceiverCPU     = catalog.ReceiverCPU
)

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
	case CPU:
		return []string{catalog.CPUOps}
	case Memory:
		return []string{catalog.MemoryRead, catalog.MemoryWrite}
	case GatewaySplit:
		return append([]string{catalog.SplitAbsError, catalog.SplitError, catalog.SplitShare, catalog.RequestRate, catalog.HTTPErrors}, latency...)
	}
	return nil
}

// RateMetric is the figure pairs are judged fair on: the workload's throughput or rate.
func RateMetric(kind string) string {
	switch kind {
	case TCPStream, UDPStream:
		return MetricThroughput
	case TCPRR:
		return MetricTransactionRate
	case TCPCRR:
		return MetricConnectionRate
	case CPU:
		return catalog.CPUOps
	case Memory:
		return catalog.MemoryRead
	case GatewaySplit:
		return catalog.RequestRate
	}
	return ""
}
