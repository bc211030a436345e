package store

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/record"
)

// crashEnv tells the re-executed test binary to act as the crash test's writer: the value is
// the store's location.
const crashEnv = "CNIBENCH_STORE_CRASH_DB"

const crashRun = "20261121-000000-dead"

// crashSample is the crash test's sample seq. Its number of metrics and resources and the
// size of its raw output vary with seq, so that a stored sample can be checked whole.
func crashSample(seq int) record.Sample {
	s := record.Sample{RunID: crashRun, Seq: seq, Round: seq / 10, Warmup: seq < 10, Target: "a", Path: "pod-pod",
		Workload: "tcp-stream/" + strconv.Itoa(seq%4+1), Pairs: 1 + seq%3, Started: t0().Add(time.Duration(seq) * time.Second).UTC(),
		Duration: time.Duration(seq) * time.Millisecond,
		Metrics:  map[string]float64{}, Resources: map[string]float64{}}
	for i := range 40 + seq%60 {
		s.Metrics[fmt.Sprintf("metric_%03d", i)] = float64(seq) + float64(i)/1000
	}
	for i := range 1 + seq%5 {
		s.Resources[fmt.Sprintf("resource_%d", i)] = float64(seq * i)
	}
	s.Raw = strings.Repeat(fmt.Sprintf("sample %d;", seq), 500+seq%1500)
	return s
}

// TestCrashChild is not a test on its own: TestCrashSafety runs the test binary with crashEnv
// set, and this then adds samples as fast as it can, printing "committed N" after each
// AddSample returns, until it is killed (or a minute has passed).
func TestCrashChild(t *testing.T) {
	loc := os.Getenv(crashEnv)
	if loc == "" {
		t.Skip("the writer process of TestCrashSafety")
	}
	ctx := context.Background()
	d, err := Open(ctx, loc)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	// The first writer creates the run as a run's process does, owned by itself, so that once
	// it is killed the run is one whose process is gone.
	if _, err := d.Run(ctx, crashRun); errors.Is(err, ErrNotFound) {
		err = createCrashRun(ctx, d)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	} else if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var next int
	if err := d.queryRow(ctx, d.db, `SELECT COUNT(*) FROM samples`).Scan(&next); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	deadline := time.Now().Add(time.Minute)
	for seq := next; time.Now().Before(deadline); seq++ {
		if err := d.AddSample(ctx, crashSample(seq)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		fmt.Fprintf(os.Stdout, "committed %d\n", seq)
	}
	os.Exit(4)
}

// createCrashRun stores the crash test's run, owned by this process, with its target.
func createCrashRun(ctx context.Context, d *DB) error {
	owner, err := record.CurrentOwner()
	if err != nil {
		return err
	}
	r := testRun(crashRun, t0())
	r.Owner = owner
	if err := d.CreateRun(ctx, r); err != nil {
		return err
	}
	return d.AddTarget(ctx, record.Target{RunID: crashRun, Name: "a"})
}

// TestCrashSafety SIGKILLs a process that is writing samples, several times over, and checks
// after each kill that the database is intact, every sample whose AddSample returned is
// stored, and every stored sample is complete; and at the end that the run, whose process
// is gone, is found and marked interrupted with its samples kept.
func TestCrashSafety(t *testing.T) { forEachBackend(t, testCrashSafety) }

func testCrashSafety(t *testing.T, b backend) {
	ctx := context.Background()
	loc := b.location(t)
	committed := -1
	for kill := range 8 {
		want := committed + 10 + rand.IntN(20)
		committed = runAndKill(t, b.writerLocation(loc), want)
		stored := checkCrashDB(t, b, loc, committed)
		t.Logf("kill %d: after %d reported commits, %d samples stored", kill, committed+1, stored)
		committed = stored - 1
	}

	// The next run's start finds the killed one and marks it partial, keeping its samples.
	d, err := Open(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if r, err := d.Run(ctx, crashRun); err != nil || r.Status != record.StatusRunning || !r.Interrupted() {
		t.Fatalf("killed run before marking: %+v, %v", r, err)
	}
	marked, err := d.MarkInterrupted(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(marked) != 1 || marked[0].ID != crashRun {
		t.Fatalf("MarkInterrupted marked %+v, want the killed run", marked)
	}
	r, err := d.Run(ctx, crashRun)
	if err != nil {
		t.Fatal(err)
	}
	last := crashSample(committed).Started
	if r.Status != record.StatusPartial || !r.Interrupted() || !r.Finished.Equal(last) {
		t.Errorf("killed run after marking: status %s, note %q, finished %v (want partial, interrupted, %v)", r.Status, r.Note, r.Finished, last)
	}
	if samples, err := d.Samples(ctx, crashRun); err != nil || len(samples) != committed+1 {
		t.Errorf("after marking: %d samples, %v; want %d", len(samples), err, committed+1)
	}
}

// runAndKill starts the writer, lets it report the commit of sample until, waits a random
// moment so that the kill lands anywhere in an AddSample, SIGKILLs it and returns the last
// sample it reported.
func runAndKill(t *testing.T, loc string, until int) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashEnv+"="+loc)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	last := -1
	sc := bufio.NewScanner(stdout)
	scan := func() bool {
		if !sc.Scan() {
			return false
		}
		if n, ok := strings.CutPrefix(sc.Text(), "committed "); ok {
			if last, err = strconv.Atoi(n); err != nil {
				t.Fatalf("writer said %q", sc.Text())
			}
		}
		return true
	}
	for last < until && scan() {
	}
	time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	// The writer ran ahead of our reading: take what it reported before it died.
	for scan() {
	}
	err = cmd.Wait()
	if last < until {
		t.Fatalf("writer stopped after sample %d (%v): %s", last, err, stderr.String())
	}
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("writer was not killed: %v: %s", err, stderr.String())
	}
	return last
}

// checkCrashDB checks the store at loc after a kill and returns how many samples it holds.
func checkCrashDB(t *testing.T, b backend, loc string, committed int) int {
	t.Helper()
	ctx := context.Background()
	d, err := Open(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	b.afterKill(t, d)

	samples, err := d.Samples(ctx, crashRun)
	if err != nil {
		t.Fatal(err)
	}
	// The sample in flight at the kill may have committed without being reported.
	if len(samples) != committed+1 && len(samples) != committed+2 {
		t.Fatalf("%d samples stored, want %d reported (+1 in flight)", len(samples), committed+1)
	}
	for i, s := range samples {
		want := crashSample(i)
		if len(s.Metrics) != len(want.Metrics) || len(s.Resources) != len(want.Resources) {
			t.Errorf("sample %d: %d metrics, %d resources; want %d, %d",
				s.Seq, len(s.Metrics), len(s.Resources), len(want.Metrics), len(want.Resources))
		}
		if !reflect.DeepEqual(s, want) {
			t.Errorf("sample %d differs from what was written", i)
		}
	}
	// No value rows without their sample.
	for _, table := range []string{"metrics", "resources"} {
		var orphans int
		if err := d.queryRow(ctx, d.db, `SELECT COUNT(*) FROM `+table+` v WHERE NOT EXISTS
			(SELECT 1 FROM samples s WHERE s.run_id = v.run_id AND s.seq = v.seq)`).Scan(&orphans); err != nil {
			t.Fatal(err)
		}
		if orphans != 0 {
			t.Errorf("%d %s rows without a sample", orphans, table)
		}
	}
	return len(samples)
}
