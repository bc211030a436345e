package store

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/record"
)

// storeDump is everything the API returns about a store's contents.
type storeDump struct {
	Runs     []record.Run
	ByPrefix map[string]string // Run(prefix): the id, or the error
	Targets  map[string][]record.Target
	Samples  map[string][]record.Sample
}

// fillVaried writes the same varied contents to a store: odd values, ordering traps and text
// each backend holds differently.
func fillVaried(t *testing.T, d *DB) {
	t.Helper()
	ctx := context.Background()
	runs := []record.Run{
		{ID: "20261121-120000-aaaa", Started: t0(), Finished: t0().Add(time.Hour), Status: record.StatusComplete,
			Suite: "suite:\n  - é\n", Seed: math.MinInt64, Version: "v1", Note: "all good"},
		{ID: "20261121-120000-AAAA", Started: t0(), Status: record.StatusRunning, Seed: math.MaxInt64},
		{ID: "20261121-120000-_bbb", Started: t0().Add(-time.Nanosecond), Status: record.StatusPartial, Note: "killed \x00\xff"},
		{ID: "1970", Started: time.Unix(0, 1), Finished: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
			Status: record.StatusFailed, Note: "ünïcödé 🚀"},
	}
	for _, r := range runs {
		if err := d.CreateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	for _, tg := range []record.Target{
		{RunID: runs[0].ID, Name: "b", Fingerprint: map[string]string{"cni": "cilium", "é": "\x00", "bad": "\xff"}},
		{RunID: runs[0].ID, Name: "B"},
		{RunID: runs[0].ID, Name: "_a", Fingerprint: map[string]string{}},
		{RunID: runs[1].ID, Name: "a"},
	} {
		if err := d.AddTarget(ctx, tg); err != nil {
			t.Fatal(err)
		}
	}
	samples := []record.Sample{
		{RunID: runs[0].ID, Seq: 1 << 40, Round: -1, Warmup: true, Target: "b", Path: "pod-pod", Workload: "tcp-stream/4", Pairs: 40,
			Started: t0(), Duration: -5, Raw: allBytes(), Error: "",
			Metrics: map[string]float64{"subnormal": 5e-324, "max": math.MaxFloat64, "neg": -1.5e-300,
				"sum": 0.1 + 0.2, "zero": 0, "negzero": math.Copysign(0, -1), "B": 1, "a": 2},
			Resources: map[string]float64{"node_cpu_pct": 12.5}},
		{RunID: runs[0].ID, Seq: 0, Target: "B", Pairs: 1, Started: t0().Add(time.Minute), Duration: time.Duration(math.MaxInt64),
			Raw: "\x00", Error: "refused \xc3"},
		{RunID: runs[0].ID, Seq: 2, Target: "_a", Started: time.Date(2262, 4, 11, 23, 47, 16, 854775807, time.UTC),
			Resources: map[string]float64{"x": 0}},
		{RunID: runs[1].ID, Seq: 0, Target: "a", Started: t0(), Raw: "é", Profile: "swapper;do_idle_[k] 3\n"},
	}
	for _, s := range samples {
		if err := d.AddSample(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
}

// dump reads the store's contents through the API.
func dump(t *testing.T, d *DB) storeDump {
	t.Helper()
	ctx := context.Background()
	runs, err := d.Runs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := storeDump{Runs: runs, ByPrefix: map[string]string{}, Targets: map[string][]record.Target{}, Samples: map[string][]record.Sample{}}
	for _, prefix := range []string{"2026", "20261121-120000-a", "20261121-120000-A", "20261121-120000-_", "1", "é", "\xff", "%"} {
		r, err := d.Run(ctx, prefix)
		out.ByPrefix[prefix] = r.ID
		if err != nil {
			out.ByPrefix[prefix] = err.Error()
		}
	}
	for _, r := range runs {
		if out.Targets[r.ID], err = d.Targets(ctx, r.ID); err != nil {
			t.Fatal(err)
		}
		if out.Samples[r.ID], err = d.Samples(ctx, r.ID); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestBackendsAgree writes the same contents to a store of each backend and compares what
// comes back, value for value (%#v shows what reflect.DeepEqual does not, such as -0).
func TestBackendsAgree(t *testing.T) {
	dumps := map[string]storeDump{}
	for _, b := range backends() {
		d := openTest(t, b)
		fillVaried(t, d)
		dumps[b.name] = dump(t, d)
	}
	sqlite, postgres := dumps["sqlite"], dumps["postgres"]
	if !reflect.DeepEqual(sqlite, postgres) || fmt.Sprintf("%#v", sqlite) != fmt.Sprintf("%#v", postgres) {
		t.Errorf("the backends differ:\nsqlite:   %#v\npostgres: %#v", sqlite, postgres)
		for id := range sqlite.Samples {
			for i := range sqlite.Samples[id] {
				if i < len(postgres.Samples[id]) && fmt.Sprintf("%#v", sqlite.Samples[id][i]) != fmt.Sprintf("%#v", postgres.Samples[id][i]) {
					t.Errorf("sample %d of %s:\nsqlite:   %#v\npostgres: %#v", i, id, sqlite.Samples[id][i], postgres.Samples[id][i])
				}
			}
		}
	}
	if len(sqlite.Runs) != 4 || len(sqlite.Samples["20261121-120000-aaaa"]) != 3 {
		t.Errorf("the varied contents did not go in whole: %d runs", len(sqlite.Runs))
	}
	t.Logf("runs: %v", sqlite.Runs)
	t.Logf("prefixes: %q", sqlite.ByPrefix)
}
