package agent

import (
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/agentcmd"
)

func TestSummarize(t *testing.T) {
	// 100 samples of 1..100 us, shuffled: nearest rank puts p50 at 50, p90 at 90, p99 at 99.
	var s samples
	for i := range 100 {
		s = append(s, time.Duration((i*37)%100+1)*time.Microsecond)
	}
	got := s.summarize()
	want := agentcmd.Latencies{Min: 1, Mean: 50.5, P50: 50, P90: 90, P99: 99, Max: 100}
	if got != want {
		t.Errorf("summarize(1..100 us) = %+v, want %+v", got, want)
	}
	if got := (samples{7 * time.Microsecond}).summarize(); got != (agentcmd.Latencies{Min: 7, Mean: 7, P50: 7, P90: 7, P99: 7, Max: 7}) {
		t.Errorf("one sample: %+v", got)
	}
	if got := (samples{}).summarize(); got != (agentcmd.Latencies{}) {
		t.Errorf("no samples: %+v", got)
	}
	// Ten samples: p90 is the 9th, p99 the 10th; in floating point 0.9*10 could round up.
	ten := samples{}
	for i := 1; i <= 10; i++ {
		ten = append(ten, time.Duration(i)*time.Microsecond)
	}
	if got := ten.summarize(); got.P50 != 5 || got.P90 != 9 || got.P99 != 10 {
		t.Errorf("ten samples: %+v, want p50 5, p90 9, p99 10", got)
	}
}
