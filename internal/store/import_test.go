package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/record"
)

func TestImport(t *testing.T) { forEachBackend(t, testImport) }

// testImport imports a run into a store without it, then into one holding its first samples
// with the run marked interrupted (its process gone while the store was away): the missing
// samples and the run's ending are added, what was there is left, and a second import adds
// nothing.
func testImport(t *testing.T, b backend) {
	ctx := context.Background()
	run := testRun("imported", t0())
	run.Status, run.Finished, run.Note = record.StatusComplete, t0().Add(time.Hour), ""
	targets := []record.Target{{RunID: "imported", Name: "a", Fingerprint: map[string]string{"cni": "bridge"}}}
	var samples []record.Sample
	for seq := range 6 {
		s := record.Sample{RunID: "imported", Seq: seq, Target: "a", Path: "pod-pod", Workload: "tcp-stream/1", Pairs: 1,
			Started: t0().Add(time.Duration(seq) * time.Second).UTC(), Metrics: map[string]float64{"throughput_gbps": float64(seq)}}
		samples = append(samples, s)
	}

	fresh := openTest(t, b)
	if got, err := fresh.Import(ctx, run, targets, samples); err != nil || got != (Imported{NewRun: true, Targets: 1, Samples: 6}) {
		t.Fatalf("import into a store without the run: %+v, %v", got, err)
	}
	checkImported(t, fresh, run, samples)

	d := openTest(t, b)
	child, dead := childOwner(t)
	started := run
	started.Status, started.Finished, started.Owner = record.StatusRunning, time.Time{}, dead
	if err := d.CreateRun(ctx, started); err != nil {
		t.Fatal(err)
	}
	if err := d.AddTarget(ctx, targets[0]); err != nil {
		t.Fatal(err)
	}
	for _, s := range samples[:2] {
		if err := d.AddSample(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	_ = child.Process.Kill()
	_ = child.Wait()
	if marked, err := d.MarkInterrupted(ctx); err != nil || len(marked) != 1 {
		t.Fatalf("MarkInterrupted: %+v, %v", marked, err)
	}
	if got, err := d.Import(ctx, run, targets, samples); err != nil || got != (Imported{Samples: 4, Existing: 2, Finished: true}) {
		t.Fatalf("import into a store holding the run's start: %+v, %v", got, err)
	}
	if got, err := d.Import(ctx, run, targets, samples); err != nil || got != (Imported{Existing: 6}) {
		t.Errorf("import again: %+v, %v", got, err)
	}
	run.Owner = dead
	checkImported(t, d, run, samples)
}

func checkImported(t *testing.T, d *DB, run record.Run, samples []record.Sample) {
	t.Helper()
	ctx := context.Background()
	r, err := d.Run(ctx, run.ID)
	if err != nil || r.Status != run.Status || !r.Finished.Equal(run.Finished) || r.Owner != run.Owner {
		t.Errorf("imported run: %+v, %v; want %+v", r, err, run)
	}
	got, err := d.Samples(ctx, run.ID)
	if err != nil || !reflect.DeepEqual(got, samples) {
		t.Errorf("imported samples: %+v, %v; want %+v", got, err, samples)
	}
}

// TestTransient: an SQLite file locked by another writer is transient, a refused row is not.
func TestTransient(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "results.db")
	d, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	addRunWithTarget(t, d, "r")
	// Two connections that do not wait for each other's lock.
	noWait := func() *sql.DB {
		db, err := sql.Open("sqlite", "file:"+path+"?_busy_timeout=0&_txlock=immediate")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		return db
	}
	holder, other := noWait(), noWait()
	tx, err := holder.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `UPDATE runs SET note = 'x'`); err != nil {
		t.Fatal(err)
	}
	_, busy := other.BeginTx(ctx, nil)
	if busy == nil || !Transient(busy) {
		t.Errorf("a locked database: %v, transient %v", busy, Transient(busy))
	}
	_ = tx.Rollback()
	s := record.Sample{RunID: "r", Seq: 0, Target: "a"}
	if err := d.AddSample(ctx, s); err != nil {
		t.Fatal(err)
	}
	dup := d.AddSample(ctx, s)
	if dup == nil || Transient(dup) {
		t.Errorf("a sample stored twice: %v, transient %v", dup, Transient(dup))
	}
	if Transient(nil) {
		t.Error("no error is transient")
	}
}
