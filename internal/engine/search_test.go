package engine

import (
	"strings"
	"testing"
	"time"
)

// TestSearchWorkload checks a rate search's ID round trip, its trials and its validation.
func TestSearchWorkload(t *testing.T) {
	w := Workload{Kind: UDPStream, MessageSize: 1300, Rate: "1000M", Search: true, MaxLoss: 0.1, Duration: 8 * time.Second}
	if err := w.Validate(); err != nil {
		t.Fatal(err)
	}
	if id := w.ID(); id != "udp-stream/1300B@1G/search0.1%" {
		t.Errorf("ID = %s", id)
	}
	back, err := ParseID(w.ID())
	if err != nil || !back.Search || back.MaxLoss != 0.1 || back.Rate != "1G" || back.MessageSize != 1300 {
		t.Errorf("ParseID(%s) = %+v, %v", w.ID(), back, err)
	}
	zero := Workload{Kind: UDPStream, MessageSize: 1300, Rate: "1G", Search: true}
	if id := zero.ID(); id != "udp-stream/1300B@1G/search0%" {
		t.Errorf("zero-loss search ID = %s", id)
	}
	for d, want := range map[time.Duration][2]int{3 * time.Second: {3, 1}, 8 * time.Second: {8, 1}, 20 * time.Second: {8, 2}, 8 * time.Minute: {8, 60}} {
		w.Duration = d
		if got := [2]int{w.SearchTrials(), int(w.TrialDuration() / time.Second)}; got != want {
			t.Errorf("at %s: %d trials of %d s, want %v", d, got[0], got[1], want)
		}
	}
	w.Duration = 8 * time.Second
	tr := w.Trial(412_500_000)
	if tr.Search || tr.Rate != "412500K" || tr.Duration != time.Second || tr.ID() != "udp-stream/1300B@412500K" {
		t.Errorf("Trial = %+v (%s)", tr, tr.ID())
	}
	for _, c := range []struct {
		w    Workload
		want string
	}{
		{Workload{Kind: TCPStream, Streams: 1, Search: true, Duration: 8 * time.Second}, "maxLoss: expected only for udp-stream"},
		{Workload{Kind: UDPStream, MessageSize: 1300, Rate: "1G", Search: true, MaxLoss: 100, Duration: 8 * time.Second}, "maxLoss: expected a percentage from 0 to below 100"},
		{Workload{Kind: UDPStream, MessageSize: 1300, Rate: "1G", Search: true, Duration: 2 * time.Second}, "duration: expected at least 3s for a rate search"},
	} {
		if err := c.w.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.w, err, c.want)
		}
	}
	if _, err := ParseID("udp-stream/1300B@1G/seek1%"); err == nil || !strings.Contains(err.Error(), "expected /searchLOSS%") {
		t.Errorf("a bad search suffix: %v", err)
	}
}
