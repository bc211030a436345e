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
