package engine

import (
	"slices"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/catalog"
)

// kindExamples is a workload ID of every kind: a kind added to Kinds without one fails
// TestEveryKindIsComplete.
var kindExamples = map[string]string{
	TCPStream:    "tcp-stream/2x64K",
	UDPStream:    "udp-stream/1300B@1G/search0.1%",
	TCPRR:        "tcp-rr/1B",
	TCPCRR:       "tcp-crr/64B",
	CPU:          "cpu/all",
	Memory:       "memory/1x16M",
	Stream:       "stream/2x64M",
	GatewaySplit: "gateway-split/40%x100vu",
}

// Every kind's entry is whole: its figures catalogued, its rate among them, its engines
// existing and one of them measuring an example, whose ID reads back to itself.
func TestEveryKindIsComplete(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range Kinds() {
		if seen[k.Name] {
			t.Errorf("kind %s listed twice", k.Name)
		}
		seen[k.Name] = true
		if k.validate == nil || k.id == nil || k.parse == nil || len(k.Metrics) == 0 || len(k.Engines) == 0 {
			t.Errorf("kind %s: incomplete entry %+v", k.Name, k)
			continue
		}
		for _, m := range append(slices.Clone(k.Metrics), k.VerdictMetrics...) {
			if _, ok := catalog.Lookup(m); !ok {
				t.Errorf("kind %s: metric %s not in the catalogue", k.Name, m)
			}
		}
		if !slices.Contains(k.Metrics, k.RateMetric) {
			t.Errorf("kind %s: rate metric %q is not one of its metrics %v", k.Name, k.RateMetric, k.Metrics)
		}
		id, ok := kindExamples[k.Name]
		if !ok {
			t.Errorf("kind %s: no example ID in kindExamples", k.Name)
			continue
		}
		w, err := ParseID(id)
		if err != nil || w.Kind != k.Name || w.ID() != id {
			t.Errorf("kind %s: ParseID(%q) = %+v (ID %q), %v", k.Name, id, w, w.ID(), err)
			continue
		}
		w.Duration = 10 * time.Second
		e, err := For(w)
		if err != nil || !slices.Contains(k.Engines, e.Name()) {
			t.Errorf("kind %s: For(%s) = %v, %v; want one of %v", k.Name, id, e, err, k.Engines)
		}
	}
	if got := KindRank("no-such-kind"); got != len(Kinds()) {
		t.Errorf("KindRank of an unknown kind = %d, want %d", got, len(Kinds()))
	}
	if _, ok := LookupKind("no-such-kind"); ok {
		t.Error("LookupKind found an unknown kind")
	}
}
