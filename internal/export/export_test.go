package export

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	runlabel "github.com/cnibench/cnibench/internal/label"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/store"
	"github.com/cnibench/cnibench/internal/testsupport/seedstore"
)

const (
	runA = "20261121-100000-aaaa"
	runB = "20261122-090000-bbbb"
)

// t0 has a sub-second part so that lossy time formatting shows.
func t0() time.Time { return time.Date(2026, 11, 21, 10, 0, 0, 123456789, time.UTC) }

// trickyFingerprint holds every character OpenMetrics and CSV must escape.
func trickyFingerprint() map[string]string {
	return map[string]string{"cni": "bridge", "kernel": `6.1 "lts" \ build` + "\n#2", "pod-mtu": "1500", "run": "clash"}
}

// fill creates a store with two runs: runA has two targets (bridge, cilium-vxlan), each with
// a warm-up sample per cell (by default), a failed sample, metrics and resources; runB has one.
func fill(t *testing.T) *store.DB {
	t.Helper()
	ctx := context.Background()
	db := seedstore.TempStore(t)
	cell := func(target, path string, mean float64) seedstore.Cell {
		return seedstore.Cell{Target: target, Path: path, Workload: "tcp-stream/1",
			Metrics:   map[string][]float64{"throughput_gbps": seedstore.Normal(5, mean, 0.3), "retransmits": {0, 1, 0, 2, 0}},
			Resources: map[string][]float64{"cpu_s_per_gb": seedstore.Normal(5, 1, 0.05), "host_cpu_seconds": seedstore.Normal(5, 4, 0.1)}}
	}
	failing := cell("cilium-vxlan", "cross-node", 12)
	failing.Failed = 1
	err := seedstore.Add(ctx, db, seedstore.Run{ID: runA, Started: t0(),
		Targets: []record.Target{{Name: "bridge", Fingerprint: trickyFingerprint()}, {Name: "cilium-vxlan"}},
		Cells:   []seedstore.Cell{cell("bridge", "host-network", 20), cell("bridge", "cross-node", 10), failing}})
	if err != nil {
		t.Fatal(err)
	}
	err = seedstore.Add(ctx, db, seedstore.Run{ID: runB, Started: t0().Add(24 * time.Hour), Status: record.StatusPartial,
		Labels:  map[string]string{"branch": "main", "commit": "0123abc"},
		Targets: []record.Target{{Name: "bridge"}}, Cells: []seedstore.Cell{cell("bridge", "cross-node", 11)}})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func load(t *testing.T, db *store.DB, id string) Bundle {
	t.Helper()
	b, err := Load(context.Background(), db, id)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestLoadPrefix(t *testing.T) {
	db := fill(t)
	b := load(t, db, "20261121")
	if b.Run.ID != runA || len(b.Targets) != 2 || len(b.Samples) != 3+3*5+1 {
		t.Fatalf("Load(prefix): run %s, %d targets, %d samples", b.Run.ID, len(b.Targets), len(b.Samples))
	}
	_, err := Load(context.Background(), db, "2026112")
	if !errors.Is(err, store.ErrAmbiguous) {
		t.Errorf("Load(ambiguous prefix): err = %v", err)
	}
}

func TestCSV(t *testing.T) {
	b := load(t, fill(t), runA)
	var buf bytes.Buffer
	if err := WriteCSV(&buf, b); err != nil {
		t.Fatal(err)
	}
	records, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatalf("CSV does not parse back: %v\n%s", err, buf.String())
	}
	if !reflect.DeepEqual(records[0], CSVHeader()) {
		t.Fatalf("header = %v", records[0])
	}
	col := map[string]int{}
	for i, h := range CSVHeader() {
		col[h] = i
	}
	// 3 warm-up + 15 measured samples with 4 values each, and 1 failed sample with none.
	if want := 1 + 18*4 + 1; len(records) != want {
		t.Fatalf("%d records, want %d", len(records), want)
	}
	var warmups, failed int
	for _, rec := range records[1:] {
		seq, _ := strconv.Atoi(rec[col["seq"]])
		s := b.Samples[seq]
		if rec[col["run"]] != runA || rec[col["target"]] != s.Target || rec[col["path"]] != s.Path ||
			rec[col["workload"]] != s.Workload || rec[col["round"]] != strconv.Itoa(s.Round) {
			t.Errorf("record %v does not match sample %+v", rec, s)
		}
		started, err := time.Parse(time.RFC3339, rec[col["started"]])
		if err != nil || !started.Equal(s.Started) {
			t.Errorf("seq %d: started %q (%v), want %v", seq, rec[col["started"]], err, s.Started)
		}
		if rec[col["warmup"]] == "true" {
			warmups++
		}
		if rec[col["error"]] != "" {
			failed++
			if rec[col["error"]] != seedstore.FailedError || rec[col["kind"]] != "" || rec[col["value"]] != "" {
				t.Errorf("failed sample's record: %q", rec)
			}
			continue
		}
		values := s.Metrics
		if rec[col["kind"]] == KindResource {
			values = s.Resources
		}
		want, ok := values[rec[col["name"]]]
		got, err := strconv.ParseFloat(rec[col["value"]], 64)
		if !ok || err != nil || got != want {
			t.Errorf("seq %d %s %s: value %q, want %v", seq, rec[col["kind"]], rec[col["name"]], rec[col["value"]], want)
		}
	}
	if warmups != 3*4 || failed != 1 {
		t.Errorf("%d warm-up records, %d failed; want 12, 1", warmups, failed)
	}
}

func TestJSONRoundTrip(t *testing.T) {
	b := load(t, fill(t), runA)
	var buf bytes.Buffer
	if err := WriteJSON(&buf, b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"raw": "{\"round\": 1`) || !strings.Contains(buf.String(), `"format": "cnibench-run/v2"`) {
		t.Errorf("JSON lacks the raw output or the format:\n%.600s", buf.String())
	}
	got, err := ReadJSON(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, b) {
		t.Errorf("round trip differs:\n got %+v\nwant %+v", got, b)
	}
	if _, err := ReadJSON(strings.NewReader(`{"format": "other/v9"}`)); err == nil {
		t.Error("ReadJSON accepted another format")
	}
}

func TestList(t *testing.T) {
	db := fill(t)
	main, err := runlabel.ParseSelector("branch=main")
	if err != nil {
		t.Fatal(err)
	}
	if runs, err := List(context.Background(), db, main); err != nil || len(runs) != 1 || runs[0].ID != runB {
		t.Errorf("List(branch=main) = %+v, %v; want %s alone", runs, err, runB)
	}
	runs, err := List(context.Background(), db, runlabel.Selector{})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[0].ID != runB || runs[1].ID != runA {
		t.Fatalf("List: %+v", runs)
	}
	a := runs[1]
	if !reflect.DeepEqual(a.Targets, []string{"bridge", "cilium-vxlan"}) || a.Samples != 16 || a.Failed != 1 ||
		a.Warmup != 3 || a.Status != record.StatusComplete || a.Duration != 19*seedstore.SampleInterval {
		t.Errorf("run A: %+v", a)
	}
	var table, js bytes.Buffer
	if err := WriteList(&table, "table", runs); err != nil {
		t.Fatal(err)
	}
	if err := WriteList(&js, "json", runs); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ID", runA, "bridge,cilium-vxlan", "16 (1 failed)", "3m10s", record.StatusPartial, "LABELS", "branch=main,commit=0123abc"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	if !strings.Contains(js.String(), `"branch": "main"`) {
		t.Errorf("json lacks the labels:\n%s", js.String())
	}
	if !strings.Contains(js.String(), `"duration_s": 190`) || !strings.Contains(js.String(), `"failed": 1`) {
		t.Errorf("json:\n%s", js.String())
	}
	if err := WriteList(&js, "yaml", runs); err == nil || !strings.Contains(err.Error(), `output: "yaml"`) {
		t.Errorf("WriteList(yaml): err = %v", err)
	}
	js.Reset()
	if err := WriteList(&js, "json", nil); err != nil || strings.TrimSpace(js.String()) != "[]" {
		t.Errorf("empty list as json: %q, %v", js.String(), err)
	}
}

func TestWriteUnknownFormat(t *testing.T) {
	err := Write(&bytes.Buffer{}, "xml", Bundle{})
	if err == nil || !strings.Contains(err.Error(), `format: "`) || !strings.Contains(err.Error(), "openmetrics") {
		t.Errorf("Write(xml): err = %v", err)
	}
}
