package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/compare"
	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/testsupport/seedstore"
)

func TestCompareBaseline(t *testing.T) {
	ctx := context.Background()
	db := seedstore.TempStore(t)
	stream := func(target string, gbps float64) seedstore.Cell {
		return seedstore.Cell{Target: target, Path: "cross-node", Workload: "tcp-stream/1",
			Metrics: map[string][]float64{"throughput_gbps": seedstore.Normal(8, gbps, 0.3)}}
	}
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	runs := []seedstore.Run{
		{ID: "20261121-100000-base", Started: at, Targets: []record.Target{{Name: "bridge"}, {Name: "flannel"}},
			Cells: []seedstore.Cell{stream("bridge", 10), stream("flannel", 9)}},
		{ID: "20261121-110000-next", Started: at.Add(time.Hour), Targets: []record.Target{{Name: "bridge"}, {Name: "flannel"}},
			Cells: []seedstore.Cell{stream("bridge", 10), stream("flannel", 7)}},
		{ID: "20261121-120000-lone", Started: at.Add(2 * time.Hour), Targets: []record.Target{{Name: "cilium"}},
			Cells: []seedstore.Cell{stream("cilium", 12)}},
	}
	for _, r := range runs {
		if err := seedstore.Add(ctx, db, r); err != nil {
			t.Fatal(err)
		}
	}
	targets := func(i int) []record.Target { return runs[i].Targets }
	run := func(i int) record.Run { return record.Run{ID: runs[i].ID} }

	var out bytes.Buffer
	// Target by target; flannel lost 22 %, bridge nothing.
	err := compareBaseline(ctx, &out, db, "20261121-100000", run(1), targets(1), &compare.Gate{Tolerance: 0.05})
	if err == nil || !strings.Contains(err.Error(), "/flannel worse than") || strings.Contains(err.Error(), "/bridge worse than") {
		t.Errorf("gate: %v", err)
	}
	if n := strings.Count(out.String(), "Against the baseline run 20261121-100000-base"); n != 2 {
		t.Errorf("%d comparisons printed, want 2:\n%s", n, out.String())
	}
	if err := compareBaseline(ctx, &out, db, "20261121-100000", run(1), targets(1), nil); err != nil {
		t.Errorf("without a gate: %v", err)
	}
	// A run with one target against a run with two: no pairing.
	if err := compareBaseline(ctx, &out, db, "20261121-100000", run(2), targets(2), nil); err == nil || !strings.Contains(err.Error(), "no target of the same name") {
		t.Errorf("no pairing: %v", err)
	}
	if err := compareBaseline(ctx, &out, db, "nope", run(1), targets(1), nil); err == nil || !strings.Contains(err.Error(), "baseline: nope") {
		t.Errorf("unknown baseline: %v", err)
	}
}
