package store

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/export"
	"github.com/cnibench/cnibench/internal/label"
	"github.com/cnibench/cnibench/internal/record"
)

// concurrentEnv tells the re-executed test binary to act as one of TestConcurrentRuns'
// writers: the value is "RUN-ID STORE-LOCATION".
const concurrentEnv = "CNIBENCH_STORE_CONCURRENT_RUN"

// concurrentGoEnv names the file whose creation starts TestConcurrentRuns' writers.
const concurrentGoEnv = "CNIBENCH_STORE_CONCURRENT_GO"

// concurrentSamples is how many samples each writer stores.
const concurrentSamples = 300

// concurrentSample is sample seq of the run: every value and the raw output name the run
// and the seq, so that a sample of one run read as another's shows.
func concurrentSample(run string, seq int) record.Sample {
	tag := float64(run[len(run)-1]) * 1000
	s := record.Sample{RunID: run, Seq: seq, Round: seq / 10, Target: "a", Path: "pod-pod", Workload: "tcp-stream/1", Pairs: 1,
		Started: t0().Add(time.Duration(seq) * time.Second).UTC(), Duration: time.Second,
		Metrics: map[string]float64{}, Resources: map[string]float64{"node_cpu_pct": tag + float64(seq)},
		Raw: strings.Repeat(fmt.Sprintf("%s/%d;", run, seq), 50)}
	for i := range 30 {
		s.Metrics[fmt.Sprintf("metric_%02d", i)] = tag + float64(seq) + float64(i)/100
	}
	return s
}

// TestConcurrentWriter is not a test on its own: TestConcurrentRuns runs the test binary with
// concurrentEnv set, and this then stores a run as `cnibench run` does, in its own process,
// once the file named by concurrentGoEnv exists (so that the writers start together).
func TestConcurrentWriter(t *testing.T) {
	spec := os.Getenv(concurrentEnv)
	if spec == "" {
		t.Skip("a writer process of TestConcurrentRuns")
	}
	run, loc, _ := strings.Cut(spec, " ")
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		if _, err := os.Stat(os.Getenv(concurrentGoEnv)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			fmt.Fprintln(os.Stderr, "no start signal")
			os.Exit(3)
		}
	}
	if err := writeConcurrentRun(context.Background(), run, loc); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
}

func writeConcurrentRun(ctx context.Context, run, loc string) error {
	d, err := Open(ctx, loc)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.CreateRun(ctx, testRun(run, t0())); err != nil {
		return err
	}
	if err := d.AddTarget(ctx, record.Target{RunID: run, Name: "a"}); err != nil {
		return err
	}
	for seq := range concurrentSamples {
		if err := d.AddSample(ctx, concurrentSample(run, seq)); err != nil {
			return err
		}
		// A run's samples are seconds apart: the other writer gets the lock in between, as
		// it would, rather than waiting for this one to end (SQLite's busy handler sleeps).
		time.Sleep(2 * time.Millisecond)
	}
	return d.FinishRun(ctx, run, record.StatusComplete, t0().Add(time.Hour), "")
}

// TestConcurrentRuns has two processes store a run each into one store at once, while this
// one lists the runs as `results list` does, opening the store anew each time, and reads
// every run's samples, in a loop: no write and no read fails (SQLite's "database is locked"
// included), every sample read is whole and its run's own, and each run reads as a prefix of
// what its writer stores, then as all of it.
func TestConcurrentRuns(t *testing.T) { forEachBackend(t, testConcurrentRuns) }

func testConcurrentRuns(t *testing.T, b backend) {
	ctx := context.Background()
	loc := b.location(t)
	d, err := Open(ctx, loc) // the store exists, as `results list` needs
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	runs := []string{"20261127-230000-0001", "20261127-230000-0002"}
	done := make(chan error, len(runs))
	start := filepath.Join(t.TempDir(), "go")
	for _, run := range runs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestConcurrentWriter$", "-test.count=1")
		cmd.Env = append(os.Environ(), concurrentEnv+"="+run+" "+loc, concurrentGoEnv+"="+start)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() {
			if err := cmd.Wait(); err != nil {
				done <- fmt.Errorf("writer of run %s: %v: %s", run, err, out.String())
				return
			}
			done <- nil
		}()
	}
	if err := os.WriteFile(start, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	reads, both, finished := 0, 0, 0
	for finished < len(runs) {
		select {
		case err := <-done:
			if err != nil {
				t.Error(err)
			}
			finished++
		default:
		}
		if readConcurrent(t, loc) == len(runs) {
			both++
		}
		reads++
	}
	t.Logf("%s: %d reads (%d of them while both runs were being written) while two writers stored %d samples each in %s",
		b.name, reads, both, concurrentSamples, time.Since(began).Round(time.Millisecond))
	if both == 0 {
		t.Error("no read saw both runs being written: the writers did not overlap")
	}
	for _, run := range runs {
		samples, err := d.Samples(ctx, run)
		if err != nil || len(samples) != concurrentSamples {
			t.Errorf("run %s: %d samples, %v; want %d", run, len(samples), err, concurrentSamples)
		}
		if r, err := d.Run(ctx, run); err != nil || r.Status != record.StatusComplete {
			t.Errorf("run %s: %+v, %v", run, r, err)
		}
	}
}

// readConcurrent opens the store as `results list` does, lists its runs and checks every
// sample of each; it returns how many runs it read in part, their writers still at work.
func readConcurrent(t *testing.T, loc string) int {
	t.Helper()
	ctx := context.Background()
	d, err := OpenExisting(ctx, loc)
	if err != nil {
		t.Fatalf("open while writing: %v", err)
	}
	defer d.Close()
	list, err := export.List(ctx, d, label.Selector{})
	if err != nil {
		t.Fatalf("list while writing: %v", err)
	}
	partial := 0
	for _, info := range list {
		samples, err := d.Samples(ctx, info.ID)
		if err != nil {
			t.Fatalf("samples of %s while writing: %v", info.ID, err)
		}
		for i, s := range samples {
			want := concurrentSample(info.ID, i)
			if s.Seq != i || s.Raw != want.Raw || len(s.Metrics) != len(want.Metrics) ||
				s.Metrics["metric_07"] != want.Metrics["metric_07"] || s.Resources["node_cpu_pct"] != want.Resources["node_cpu_pct"] {
				t.Fatalf("run %s: sample %d read while writing is not the one written (seq %d, %d metrics, raw %.30q)",
					info.ID, i, s.Seq, len(s.Metrics), s.Raw)
			}
		}
		if !strings.HasPrefix(info.ID, "20261127-230000-000") {
			t.Fatalf("a run nobody wrote: %s", info.ID)
		}
		if len(samples) > 0 && len(samples) < concurrentSamples {
			partial++
		}
	}
	return partial
}
