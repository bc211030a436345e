package history

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/label"
	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/store"
	"github.com/cnibench/cnibench/internal/testsupport/seedstore"
)

// nightly stores runs as a CI would, one a day on branch main (and one on another branch),
// into a real SQLite store: cross-node throughput around 10 Gbit/s with 4 % noise between
// runs, dropping by drop from run 15 on, and tcp-rr latency unchanged.
func nightly(t *testing.T, runs int, drop float64) *store.DB {
	t.Helper()
	db := seedstore.TempStore(t)
	rng := rand.New(rand.NewPCG(7, 8))
	t0 := time.Date(2026, 10, 1, 3, 0, 0, 0, time.UTC)
	for i := range runs {
		level := 10.0
		if i >= 15 {
			level *= 1 - drop
		}
		runMean := level * math.Exp(0.04*rng.NormFloat64())
		lat := 50 * math.Exp(0.04*rng.NormFloat64())
		cells := []seedstore.Cell{
			{Target: "local", Path: "cross-node", Workload: "tcp-stream/1", Metrics: map[string][]float64{
				"throughput_gbps": {runMean * 0.99, runMean, runMean * 1.01}}},
			{Target: "local", Path: "cross-node", Workload: "tcp-rr/64B", Metrics: map[string][]float64{
				"latency_p50_us": {lat, lat * 1.01, lat * 0.99}, "latency_p99_us": {2 * lat, 2 * lat, 2 * lat}}},
		}
		err := seedstore.Add(context.Background(), db, seedstore.Run{ID: fmt.Sprintf("run-%02d", i), Started: t0.Add(time.Duration(i) * 24 * time.Hour),
			Targets: []record.Target{{Name: "local"}}, Cells: cells, Labels: map[string]string{"branch": "main", "commit": fmt.Sprintf("c%02d", i)}})
		if err != nil {
			t.Fatal(err)
		}
	}
	// Another branch's run, far off, which the selector leaves out.
	err := seedstore.Add(context.Background(), db, seedstore.Run{ID: "dev-1", Started: t0.Add(100 * time.Hour), Targets: []record.Target{{Name: "local"}},
		Cells: []seedstore.Cell{{Target: "local", Path: "cross-node", Workload: "tcp-stream/1", Metrics: map[string][]float64{
			"throughput_gbps": {1, 1, 1}}}}, Labels: map[string]string{"branch": "dev"}})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func mainBranch(t *testing.T) label.Selector {
	sel, err := label.ParseSelector("branch=main")
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

// TestHistoryFindsTheStep: a 12 % throughput drop at run 15 of 30 is found there, called worse,
// sized with an interval that holds the true step, and fails --fail-on-change; the latency
// series, unchanged, has no change point; the table shows the verdict first.
func TestHistoryFindsTheStep(t *testing.T) {
	db := nightly(t, 30, 0.12)
	series, runs, err := BuildCounted(context.Background(), db, Options{Selector: mainBranch(t)})
	if err != nil {
		t.Fatal(err)
	}
	if runs != 30 || len(series) != 2 {
		t.Fatalf("%d runs, %d series; want 30 and 2 (the dev branch's run left out)", runs, len(series))
	}
	tp := series[0]
	if tp.Metric != "throughput_gbps" {
		tp = series[1]
	}
	if len(tp.Steps) != 1 || tp.Steps[0].Index < 14 || tp.Steps[0].Index > 16 || !tp.Steps[0].Worse {
		t.Fatalf("throughput steps: %+v", tp.Steps)
	}
	if st := tp.Steps[0]; !(st.RatioLow < 0.88 && 0.88 < st.RatioHigh) {
		t.Errorf("step %.3f [%.3f, %.3f] does not hold the true 0.88", st.Ratio, st.RatioLow, st.RatioHigh)
	}
	for _, s := range series {
		if s.Metric == "latency_p50_us" && len(s.Steps) != 0 {
			t.Errorf("unchanged latency has change points: %+v", s.Steps)
		}
	}
	err = Check(series)
	var ce *ChangeError
	if !errors.As(err, &ce) || len(ce.Series) != 1 || !strings.Contains(err.Error(), "throughput_gbps") {
		t.Errorf("Check = %v", err)
	}
	var out bytes.Buffer
	if err := Write(&out, "table", series, runs); err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(out.String(), "\n")
	if first != "history of 30 run(s): 2 series, 1 with a change point, 1 for the worse" || !strings.Contains(out.String(), "WORSE at run run-1") {
		t.Errorf("table:\n%s", out.String())
	}
}

// TestHistoryOptions: --last keeps the newest runs (the step then sits elsewhere or vanishes),
// metrics and cells narrow the series, and a flat history passes --fail-on-change.
func TestHistoryOptions(t *testing.T) {
	db := nightly(t, 30, 0.12)
	ctx := context.Background()
	series, runs, err := BuildCounted(ctx, db, Options{Selector: mainBranch(t), Last: 10, Metrics: []string{"latency_p99_us"}})
	if err != nil {
		t.Fatal(err)
	}
	if runs != 10 || len(series) != 1 || series[0].Metric != "latency_p99_us" || series[0].Points[0].Run != "run-20" {
		t.Errorf("last 10, p99: %d runs, %+v", runs, series)
	}
	series, err = Build(ctx, db, Options{Path: "cross-node", Workload: "tcp-rr"})
	if err != nil || len(series) != 1 || series[0].Workload != "tcp-rr/64B" {
		t.Errorf("tcp-rr only: %+v, %v", series, err)
	}
	flat := nightly(t, 30, 0)
	series, err = Build(ctx, flat, Options{Selector: mainBranch(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(series); err != nil {
		t.Errorf("a flat history fails: %v", err)
	}
	var js bytes.Buffer
	if err := Write(&js, "json", series, 30); err != nil || !strings.Contains(js.String(), `"changes": []`) {
		t.Errorf("json: %v\n%.300s", err, js.String())
	}
}
