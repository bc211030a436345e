package store

import (
	"context"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/record"
)

// countRows counts the rows of the sample (runID, seq) in each table.
func countRows(t *testing.T, d *DB, runID string, seq int) map[string]int {
	t.Helper()
	n := map[string]int{}
	for _, table := range []string{"samples", "metrics", "resources"} {
		var c int
		if err := d.queryRow(context.Background(), d.db,
			`SELECT COUNT(*) FROM `+table+` WHERE run_id = ? AND seq = ?`, runID, seq).Scan(&c); err != nil {
			t.Fatal(err)
		}
		n[table] = c
	}
	return n
}

func TestAddSampleAtomic(t *testing.T) { forEachBackend(t, testAddSampleAtomic) }

func testAddSampleAtomic(t *testing.T, b backend) {
	ctx := context.Background()
	d := openTest(t, b)
	addRunWithTarget(t, d, "r")

	// A failure half-way: the database itself refuses the last resource row, after the
	// sample row, all metric rows and the first resource row were inserted in the
	// transaction.
	execAll(t, d, b.failTrigger)
	bad := record.Sample{RunID: "r", Seq: 1, Target: "a", Path: "p", Workload: "w", Pairs: 1, Started: t0(), Duration: time.Second,
		Metrics:   map[string]float64{"m1": 1, "m2": 2, "m3": 3},
		Resources: map[string]float64{"aaa": 1, "zzz": 2}, Raw: "raw"}
	err := d.AddSample(ctx, bad)
	if err == nil || !strings.Contains(err.Error(), "refused by test trigger") ||
		!strings.Contains(err.Error(), "add sample 1 of run r") {
		t.Fatalf("AddSample with refused resource: err = %v", err)
	}
	if n := countRows(t, d, "r", 1); n["samples"]+n["metrics"]+n["resources"] != 0 {
		t.Errorf("rows left of a failed sample: %v", n)
	}

	// The same sample goes in once the cause is gone, so nothing stale blocks it.
	execAll(t, d, b.dropTrigger)
	if err := d.AddSample(ctx, bad); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, d, "r", 1); n["samples"] != 1 || n["metrics"] != 3 || n["resources"] != 2 {
		t.Errorf("rows of the re-added sample: %v", n)
	}

	// A NaN metric is refused and leaves nothing.
	nan := record.Sample{RunID: "r", Seq: 2, Target: "a", Started: t0(), Metrics: map[string]float64{"ok": 1, "bad": math.NaN()}}
	if err := d.AddSample(ctx, nan); err == nil || !strings.Contains(err.Error(), "not finite") {
		t.Errorf("AddSample with NaN: err = %v", err)
	}
	if n := countRows(t, d, "r", 2); n["samples"]+n["metrics"]+n["resources"] != 0 {
		t.Errorf("rows left of a NaN sample: %v", n)
	}

	// A duplicate Seq is refused and neither replaces nor adds to the stored sample.
	dup := record.Sample{RunID: "r", Seq: 1, Target: "a", Started: t0(), Metrics: map[string]float64{"m1": 100, "m4": 4}}
	if err := d.AddSample(ctx, dup); err == nil {
		t.Error("AddSample with duplicate seq: no error")
	}
	samples, err := d.Samples(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	bad.Started = bad.Started.UTC()
	if len(samples) != 1 || !reflect.DeepEqual(samples[0], bad) {
		t.Errorf("after refused duplicate: samples = %+v, want only %+v", samples, bad)
	}
}

func TestAddSampleCancelled(t *testing.T) { forEachBackend(t, testAddSampleCancelled) }

func testAddSampleCancelled(t *testing.T, b backend) {
	d := openTest(t, b)
	addRunWithTarget(t, d, "r")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := d.AddSample(ctx, record.Sample{RunID: "r", Seq: 0, Target: "a", Started: t0(), Metrics: map[string]float64{"x": 1}})
	if err == nil {
		t.Fatal("AddSample with cancelled context: no error")
	}
	if n := countRows(t, d, "r", 0); n["samples"]+n["metrics"]+n["resources"] != 0 {
		t.Errorf("rows left of a cancelled sample: %v", n)
	}
	// Ctrl-C: the run is still marked partial with a fresh context.
	if err := d.FinishRun(context.Background(), "r", record.StatusPartial, t0(), "interrupted"); err != nil {
		t.Fatal(err)
	}
}
