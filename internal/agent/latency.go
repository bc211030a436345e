package agent

import (
	"slices"
	"time"

	"github.com/cnibench/cnibench/internal/agentcmd"
	"github.com/cnibench/cnibench/internal/stats"
)

// samples holds every transaction's latency, exact, in nanoseconds. Even a long run is small
// enough to keep whole: 50,000 transactions/s for 60 s is 3 million samples, 24 MB, and exact
// samples spare us a histogram's bucketing error in the tail percentiles.
type samples []time.Duration

// initialSamples sizes the first allocation so that short runs do not regrow the slice: about
// 2 s at a loopback rate. Growth after that doubles, so the copies cost O(n) in total.
const initialSamples = 1 << 16

// summarize sorts s in place and returns its summary in microseconds. Percentiles use the
// nearest-rank method (the smallest sample with at least p% of samples at or below it), so
// every reported value is a latency that was actually observed and p50 <= p90 <= p99 <= max.
// An empty s gives all zeros.
func (s samples) summarize() agentcmd.Latencies {
	if len(s) == 0 {
		return agentcmd.Latencies{}
	}
	slices.Sort(s)
	var sum float64
	for _, d := range s {
		sum += float64(d)
	}
	return agentcmd.Latencies{
		Min:  usec(s[0]),
		Mean: sum / float64(len(s)) / float64(time.Microsecond),
		P50:  usec(s.percentile(50)),
		P90:  usec(s.percentile(90)),
		P99:  usec(s.percentile(99)),
		Max:  usec(s[len(s)-1]),
	}
}

// percentile returns the nearest-rank p-th percentile (0 < p <= 100) of the sorted, non-empty
// s. The rank ceil(p*n/100) is computed in integers: in floating point 0.9*n can land a hair
// above an integer and pick the next sample.
func (s samples) percentile(p int) time.Duration {
	rank := (p*len(s) + 99) / 100
	rank = min(max(rank, 1), len(s))
	return s[rank-1]
}

func usec(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// histogram buckets every latency in microseconds, so that several clients' latencies can be
// merged into percentiles of all of them. A zero latency (below the clock's resolution) counts
// as a nanosecond.
func (s samples) histogram() *stats.Hist {
	h := stats.NewHist()
	for _, d := range s {
		_ = h.Add(usec(max(d, time.Nanosecond))) // positive and finite by construction
	}
	return h
}
