package spool_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/export"
	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/spool"
	"github.com/cnibench/cnibench/internal/store"
	"github.com/cnibench/cnibench/internal/testsupport/pgserver"
)

// TestMain lets pgserver's janitor run; each test starts its own server (pgserver.Own), which
// it stops and starts again.
func TestMain(m *testing.M) { os.Exit(pgserver.Main(m, false)) }

// envOutage sets how long TestOutage keeps the server stopped, as a Go duration; 5 s by
// default, to keep the test short.
const envOutage = "CNIBENCH_TEST_STORE_OUTAGE"

const runID = "20261127-220000-0a0a"

// sample is the test's sample seq, its values and raw output varying with seq so that a
// stored sample can be compared whole.
func sample(seq int) record.Sample {
	s := record.Sample{RunID: runID, Seq: seq, Round: seq / 4, Target: "a", Path: "pod-pod", Workload: "tcp-stream/1", Pairs: 1,
		Started: time.Date(2026, 11, 27, 22, 0, seq, 0, time.UTC), Duration: time.Duration(seq+1) * time.Millisecond,
		Metrics:   map[string]float64{"throughput_gbps": float64(seq) + 0.5, "retransmits": float64(seq % 3)},
		Resources: map[string]float64{"node_cpu_pct": float64(seq)}, Raw: "sample " + strconv.Itoa(seq), Profile: "main;f 1\n"}
	return s
}

// lines collects a Writer's status lines.
type lines struct {
	t  *testing.T
	mu sync.Mutex
	l  []string
}

func (l *lines) log(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	l.t.Log(line)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.l = append(l.l, line)
}

func (l *lines) find(re *regexp.Regexp) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.l {
		if m := re.FindStringSubmatch(line); m != nil {
			return m
		}
	}
	return nil
}

// begin opens the server's store and starts the run through a Writer.
func begin(t *testing.T, loc, dir string, wait time.Duration, log *lines) (*store.DB, *spool.Writer) {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	w := spool.New(db, spool.Options{Dir: dir, Wait: wait, Log: log.log, Backoff: 100 * time.Millisecond, MaxBackoff: time.Second})
	if err := w.CreateRun(ctx, record.Run{ID: runID, Started: time.Now(), Status: record.StatusRunning, Suite: "x", Version: "test"}); err != nil {
		t.Fatal(err)
	}
	if err := w.AddTarget(ctx, record.Target{RunID: runID, Name: "a", Fingerprint: map[string]string{"cni": "bridge"}}); err != nil {
		t.Fatal(err)
	}
	return db, w
}

// checkStored checks that the store holds exactly samples 0..n-1 of the run, whole and in
// order, and the run's status.
func checkStored(t *testing.T, db *store.DB, n int, status string) {
	t.Helper()
	ctx := context.Background()
	got, err := db.Samples(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Errorf("%d samples stored, want %d", len(got), n)
	}
	for i, s := range got {
		if want := sample(i); !reflect.DeepEqual(s, want) {
			t.Errorf("stored sample %d (seq %d) differs from sample %d written:\n got %+v\nwant %+v", i, s.Seq, i, s, want)
			break
		}
	}
	if r, err := db.Run(ctx, runID); err != nil || r.Status != status {
		t.Errorf("run: status %q, %v; want %q", r.Status, err, status)
	}
}

// TestOutage stops the run's PostgreSQL server while samples are being written, keeps it
// away (5 s, or envOutage), and starts it again: every sample is stored once, in order, the
// run ends complete, no spool file is left, and the status lines name the outage and how
// many samples waited.
func TestOutage(t *testing.T) {
	outage := 5 * time.Second
	if v := os.Getenv(envOutage); v != "" {
		var err error
		if outage, err = time.ParseDuration(v); err != nil {
			t.Fatalf("%s=%q: expected a duration such as 30s", envOutage, v)
		}
	}
	srv := pgserver.Own(t)
	dir := t.TempDir()
	log := &lines{t: t}
	db, w := begin(t, srv.URL(), dir, time.Minute, log)
	ctx := context.Background()

	stopAt := make(chan struct{})
	back := make(chan error, 1)
	go func() {
		<-stopAt
		srv.Stop()
		time.Sleep(outage) // the fault's length
		back <- srv.Start()
	}()
	began := time.Now()
	n, after := 0, -1
	for ; after != 0; n++ {
		if n == 10 {
			close(stopAt)
		}
		select {
		case err := <-back:
			if err != nil {
				t.Fatal(err)
			}
			after = 10 // samples to write once the server is back
		default:
		}
		if after > 0 {
			after--
		}
		if err := w.AddSample(ctx, sample(n)); err != nil {
			t.Fatalf("sample %d: %v", n, err)
		}
		time.Sleep(50 * time.Millisecond) // a run's samples are seconds apart
	}
	if err := w.FinishRun(ctx, runID, record.StatusComplete, time.Now(), ""); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d samples written in %s with the server stopped for %s", n, time.Since(began).Round(time.Millisecond), outage)
	checkStored(t, db, n, record.StatusComplete)
	if log.find(regexp.MustCompile(`^results store unreachable \(.+\): keeping the run's samples, in order, in memory and in `+regexp.QuoteMeta(dir))) == nil {
		t.Error("no status line named the outage and the spool file")
	}
	if m := log.find(regexp.MustCompile(`^results store back after .*: the (\d+) samples that waited`)); m == nil || m[1] == "0" {
		t.Errorf("no status line said how many samples waited: %v", m)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("spool directory after the store came back: %v", left)
	}
}

// TestNeverBack stops the server for good in the middle of a run: the run's end waits its
// bound, then fails naming the spool file, which holds the samples not stored and the
// run's ending; once the server is back, importing the file stores them, once, even when
// imported twice.
func TestNeverBack(t *testing.T) {
	srv := pgserver.Own(t)
	dir := t.TempDir()
	log := &lines{t: t}
	_, w := begin(t, srv.URL(), dir, 2*time.Second, log)
	ctx := context.Background()
	for seq := range 12 {
		if seq == 5 {
			srv.Stop()
		}
		if err := w.AddSample(ctx, sample(seq)); err != nil {
			t.Fatalf("sample %d: %v", seq, err)
		}
	}
	finished := time.Date(2026, 11, 27, 22, 1, 0, 0, time.UTC)
	began := time.Now()
	err := w.FinishRun(ctx, runID, record.StatusComplete, finished, "")
	waited := time.Since(began)
	file := filepath.Join(dir, runID+".json")
	if err == nil || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), "cnibench results import "+file) ||
		!strings.Contains(err.Error(), "7 samples (seq 5 to 11)") {
		t.Fatalf("FinishRun with the store gone: %v", err)
	}
	t.Logf("FinishRun gave up after %s: %v", waited.Round(time.Millisecond), err)
	if waited > 15*time.Second {
		t.Errorf("FinishRun waited %s, bound 2s (+ one write's timeout)", waited)
	}

	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := export.ReadJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(ctx, srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	checkStored(t, db, 5, record.StatusRunning)
	for i, want := range []store.Imported{{Samples: 7, Finished: true}, {Existing: 7}} {
		got, err := db.Import(ctx, b.Run, b.Targets, b.Samples)
		if err != nil || got != want {
			t.Errorf("import %d: %+v, %v; want %+v", i+1, got, err, want)
		}
	}
	checkStored(t, db, 12, record.StatusComplete)
	if r, err := db.Run(ctx, runID); err != nil || !r.Finished.Equal(finished) {
		t.Errorf("imported ending: %v, %v; want %v", r.Finished, err, finished)
	}
}
