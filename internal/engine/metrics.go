package engine

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/cnibench/cnibench/internal/catalog"
)

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

// finite returns m, or an error naming the first figure (in name order) that is NaN or
// infinite: an output whose numbers overflow (a window of 1e-320 s, a rate of 1e308 GB/s) is
// refused rather than stored, as neither JSON nor a mean can carry such a figure.
func finite(output string, m Metrics) (Metrics, error) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if v := m[k]; math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%s: %s: expected a finite figure, got %v", output, k, v)
		}
	}
	return m, nil
}
