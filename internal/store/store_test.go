package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/record"
)

func TestRoundTrip(t *testing.T) { forEachBackend(t, testRoundTrip) }

func testRoundTrip(t *testing.T, b backend) {
	ctx := context.Background()
	loc := b.location(t)
	d, err := Open(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	run := testRun("20261121-123456-ab12", t0())
	if err := d.CreateRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	targets := []record.Target{
		{RunID: run.ID, Name: "a", Fingerprint: map[string]string{"cni": "cilium/native", "kernel": "6.12.1", "mtu": "1500"}},
		{RunID: run.ID, Name: "b"},
	}
	for _, tg := range targets {
		if err := d.AddTarget(ctx, tg); err != nil {
			t.Fatal(err)
		}
	}
	samples := []record.Sample{
		{RunID: run.ID, Seq: 0, Round: 0, Warmup: true, Target: "a", Path: "pod-pod/cross-node", Workload: "tcp-stream/4", Pairs: 1,
			Started: t0(), Duration: 10*time.Second + 7, Metrics: map[string]float64{"throughput_bps": 9.4e9, "retransmits": 0},
			Resources: map[string]float64{"node_cpu_pct": 12.5, "cpu_s_per_gb": 0.0123}, Raw: `{"end":{}}` + "\n\x01é"},
		{RunID: run.ID, Seq: 1, Round: 1, Target: "b", Path: "pod-svc", Workload: "tcp-crr", Pairs: 99,
			Started: t0().Add(time.Minute), Duration: time.Second, Error: "connection refused",
			Profile: "# perf record\niperf3;main;vxlan_xmit_[k] 7\n"},
		{RunID: run.ID, Seq: 2, Round: 1, Target: "a", Path: "pod-pod/cross-node", Workload: "udp-rr", Pairs: 10, Flags: []string{"start-skew", "other"},
			Started: t0().Add(2 * time.Minute), Metrics: map[string]float64{"p99_us": -1.5e-300, "max": 1.7976931348623157e308}},
	}
	// Out of order, to check Samples sorts by Seq.
	for _, i := range []int{2, 0, 1} {
		if err := d.AddSample(ctx, samples[i]); err != nil {
			t.Fatal(err)
		}
	}
	finished := t0().Add(time.Hour)
	if err := d.FinishRun(ctx, run.ID, record.StatusComplete, finished, "all good"); err != nil {
		t.Fatal(err)
	}

	// Read back through a fresh handle.
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d, err = Open(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()

	got, err := d.Run(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := run
	want.Started, want.Finished, want.Status, want.Note = run.Started.UTC(), finished.UTC(), record.StatusComplete, "all good"
	if !reflect.DeepEqual(got, want) {
		t.Errorf("run:\n got %+v\nwant %+v", got, want)
	}
	gotTargets, err := d.Targets(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotTargets, targets) {
		t.Errorf("targets:\n got %+v\nwant %+v", gotTargets, targets)
	}
	gotSamples, err := d.Samples(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	for i := range samples {
		samples[i].Started = samples[i].Started.UTC()
	}
	if !reflect.DeepEqual(gotSamples, samples) {
		t.Errorf("samples:\n got %+v\nwant %+v", gotSamples, samples)
	}

	// A running run has a zero Finished time.
	if err := d.CreateRun(ctx, record.Run{ID: "r2", Started: t0()}); err != nil {
		t.Fatal(err)
	}
	r2, err := d.Run(ctx, "r2")
	if err != nil {
		t.Fatal(err)
	}
	if !r2.Finished.IsZero() || r2.Status != record.StatusRunning {
		t.Errorf("new run: finished %v, status %q; want zero, running", r2.Finished, r2.Status)
	}
}

func TestRunsNewestFirstAndDelete(t *testing.T) { forEachBackend(t, testRunsNewestFirstAndDelete) }

func testRunsNewestFirstAndDelete(t *testing.T, b backend) {
	ctx := context.Background()
	d := openTest(t, b)
	starts := map[string]time.Time{"b-middle": t0(), "a-oldest": t0().Add(-time.Hour), "c-newest": t0().Add(time.Hour)}
	for _, id := range []string{"b-middle", "a-oldest", "c-newest"} {
		addRunWithTarget(t, d, id)
		if err := d.FinishRun(ctx, id, record.StatusPartial, time.Time{}, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := d.exec(ctx, d.db, `UPDATE runs SET started = ? WHERE id = ?`, formatTime(starts[id]), id); err != nil {
			t.Fatal(err)
		}
		if err := d.AddSample(ctx, record.Sample{RunID: id, Seq: 0, Target: "a", Started: t0(),
			Metrics: map[string]float64{"x": 1}, Resources: map[string]float64{"y": 2}}); err != nil {
			t.Fatal(err)
		}
	}
	runs, err := d.Runs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	if strings.Join(ids, " ") != "c-newest b-middle a-oldest" {
		t.Errorf("Runs order = %v", ids)
	}

	if err := d.DeleteRun(ctx, "b-mid"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Run(ctx, "b-middle"); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleted run: err = %v, want ErrNotFound", err)
	}
	for _, table := range []string{"runs", "targets", "samples", "metrics", "resources"} {
		var n int
		if err := d.queryRow(ctx, d.db, `SELECT COUNT(*) FROM `+table+` WHERE `+idColumn(table)+` = ?`, "b-middle").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("%d rows of %s left after DeleteRun", n, table)
		}
		if err := d.queryRow(ctx, d.db, `SELECT COUNT(*) FROM `+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 2 {
			t.Errorf("%d rows in %s, want the other 2 runs' rows", n, table)
		}
	}
	if err := d.DeleteRun(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("DeleteRun(unknown): err = %v, want ErrNotFound", err)
	}
}

func idColumn(table string) string {
	if table == "runs" {
		return "id"
	}
	return "run_id"
}

func TestRunPrefix(t *testing.T) { forEachBackend(t, testRunPrefix) }

func testRunPrefix(t *testing.T, b backend) {
	ctx := context.Background()
	d := openTest(t, b)
	for _, id := range []string{"20261121-120000-aaaa", "20261121-120000-aabb", "20261122-080000-0001", "2026",
		"é-20261123", "x%y_z"} {
		if err := d.CreateRun(ctx, testRun(id, t0())); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		in, want string
		err      error
	}{
		{in: "20261121-120000-aaaa", want: "20261121-120000-aaaa"},
		{in: "20261121-120000-aab", want: "20261121-120000-aabb"},
		{in: "20261122", want: "20261122-080000-0001"},
		{in: "2026", want: "2026"}, // an exact id wins over being a prefix of others
		{in: "20261121-120000-aa", err: ErrAmbiguous},
		{in: "20261121", err: ErrAmbiguous},
		{in: "20261121-120000-AAAA", err: ErrNotFound}, // ids are case-sensitive
		{in: "20261121-120000-AAB", err: ErrNotFound},  // prefixes too
		{in: "2026112_", err: ErrNotFound},             // no LIKE wildcards
		{in: "2026112%", err: ErrNotFound},
		{in: "x%y", want: "x%y_z"},
		{in: "x", want: "x%y_z"},
		{in: "é", want: "é-20261123"}, // a length in characters, not bytes
		{in: "é-2026112", want: "é-20261123"},
		{in: "É", err: ErrNotFound},
		{in: "e", err: ErrNotFound},
		{in: "\xc3", err: ErrNotFound}, // half of "é"
		{in: "2026\x00", err: ErrNotFound},
		{in: "y", err: ErrNotFound},
		{in: "", err: ErrNotFound},
	} {
		r, err := d.Run(ctx, tc.in)
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("Run(%q): err = %v, want %v", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || r.ID != tc.want {
			t.Errorf("Run(%q) = %q, %v; want %q", tc.in, r.ID, err, tc.want)
		}
	}
	if err := d.DeleteRun(ctx, "20261121"); !errors.Is(err, ErrAmbiguous) {
		t.Errorf("DeleteRun(ambiguous): err = %v", err)
	}
	if runs, _ := d.Runs(ctx); len(runs) != 6 {
		t.Errorf("%d runs after refused deletes, want 6", len(runs))
	}
}

func TestValidation(t *testing.T) { forEachBackend(t, testValidation) }

func testValidation(t *testing.T, b backend) {
	ctx := context.Background()
	d := openTest(t, b)
	addRunWithTarget(t, d, "r")
	for name, err := range map[string]error{
		"run without id":           d.CreateRun(ctx, record.Run{Started: t0()}),
		"run without start":        d.CreateRun(ctx, record.Run{ID: "x"}),
		"run with bad status":      d.CreateRun(ctx, record.Run{ID: "x", Started: t0(), Status: "done"}),
		"duplicate run":            d.CreateRun(ctx, testRun("r", t0())),
		"finish unknown run":       d.FinishRun(ctx, "nope", record.StatusFailed, t0(), "boom"),
		"finish as running":        d.FinishRun(ctx, "r", "finished", t0(), ""),
		"target of unknown run":    d.AddTarget(ctx, record.Target{RunID: "nope", Name: "a"}),
		"duplicate target":         d.AddTarget(ctx, record.Target{RunID: "r", Name: "a"}),
		"unnamed target":           d.AddTarget(ctx, record.Target{RunID: "r"}),
		"sample of unknown run":    d.AddSample(ctx, record.Sample{RunID: "nope", Target: "a"}),
		"sample of unknown target": d.AddSample(ctx, record.Sample{RunID: "r", Target: "zz"}),
		"negative seq":             d.AddSample(ctx, record.Sample{RunID: "r", Seq: -1, Target: "a"}),
		"empty metric name":        d.AddSample(ctx, record.Sample{RunID: "r", Target: "a", Metrics: map[string]float64{"": 1}}),
		"infinite resource":        d.AddSample(ctx, record.Sample{RunID: "r", Target: "a", Resources: map[string]float64{"x": -1 / zero()}}),
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if err := d.FinishRun(ctx, "nope", record.StatusFailed, t0(), ""); !errors.Is(err, ErrNotFound) {
		t.Errorf("FinishRun(unknown): err = %v, want ErrNotFound", err)
	}
	if err := d.AddSample(ctx, record.Sample{RunID: "r", Seq: 7, Target: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := d.AddSample(ctx, record.Sample{RunID: "r", Seq: 7, Target: "a"}); err == nil ||
		!strings.Contains(err.Error(), "add sample 7 of run r") {
		t.Errorf("duplicate seq: err = %v, want one naming the sample and run", err)
	}
}

// zero defeats constant folding of 1/0.
func zero() float64 { return 0 }

func TestNewRunID(t *testing.T) {
	re := regexp.MustCompile(`^\d{8}-\d{6}-[0-9a-f]{4}$`)
	seen := map[string]bool{}
	for range 20 {
		id := NewRunID()
		if !re.MatchString(id) {
			t.Fatalf("NewRunID() = %q", id)
		}
		seen[id] = true
	}
	if len(seen) < 15 {
		t.Errorf("only %d distinct ids of 20", len(seen))
	}
}

func TestDefaultPath(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", "/xdg/data")
	t.Setenv("HOME", "/home/u")
	if got := DefaultPath(); got != "/xdg/data/cnibench/results.db" {
		t.Errorf("with XDG_DATA_HOME: %q", got)
	}
	t.Setenv("XDG_DATA_HOME", "relative/ignored")
	if got := DefaultPath(); got != "/home/u/.local/share/cnibench/results.db" {
		t.Errorf("with relative XDG_DATA_HOME: %q", got)
	}
	t.Setenv("XDG_DATA_HOME", "")
	if got := DefaultPath(); got != "/home/u/.local/share/cnibench/results.db" {
		t.Errorf("without XDG_DATA_HOME: %q", got)
	}
}

func TestOpenLocations(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "xdg"))
	if err := os.Mkdir(filepath.Join(dir, "existing"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ in, want string }{
		{"", filepath.Join(dir, "xdg", "cnibench", "results.db")},
		{filepath.Join(dir, "existing"), filepath.Join(dir, "existing", "results.db")},
		{filepath.Join(dir, "new", "dir") + "/", filepath.Join(dir, "new", "dir", "results.db")},
		{filepath.Join(dir, "deep", "er", "x.db"), filepath.Join(dir, "deep", "er", "x.db")},
		{"sqlite://" + filepath.Join(dir, "url.db"), filepath.Join(dir, "url.db")},
		{filepath.Join(dir, "odd ?name#%20.db"), filepath.Join(dir, "odd ?name#%20.db")},
		{dir + "/x://y.db", filepath.Join(dir, "x:", "y.db")}, // a path, not a URL
	} {
		d, err := Open(ctx, tc.in)
		if err != nil {
			t.Errorf("Open(%q): %v", tc.in, err)
			continue
		}
		if d.Location() != tc.want {
			t.Errorf("Open(%q).Location() = %q, want %q", tc.in, d.Location(), tc.want)
		}
		if err := d.CreateRun(ctx, testRun("r", t0())); err != nil {
			t.Errorf("Open(%q): write: %v", tc.in, err)
		}
		if err := d.Close(); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(tc.want); err != nil {
			t.Errorf("Open(%q): %v", tc.in, err)
		}
	}
	if _, err := Open(ctx, "mysql://me:s3cret@localhost/x?password=s3cret"); err == nil ||
		!strings.Contains(err.Error(), "unsupported scheme") || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("Open(mysql://): err = %v", err)
	}
	notDB := filepath.Join(dir, "not.db")
	if err := os.WriteFile(notDB, []byte(strings.Repeat("not a database\n", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, notDB); err == nil {
		t.Error("Open(not a database): no error")
	}
}

func TestSettings(t *testing.T) {
	ctx := context.Background()
	d := openTest(t, sqliteBackend())
	// Every pooled connection must have the settings, not just the first.
	conns := make([]interface{ Close() error }, 0, 3)
	for range 3 {
		c, err := d.db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		for pragma, want := range map[string]string{"journal_mode": "wal", "foreign_keys": "1", "busy_timeout": "5000", "synchronous": "2"} {
			var got string
			if err := c.QueryRowContext(ctx, "PRAGMA "+pragma).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("PRAGMA %s = %q, want %q", pragma, got, want)
			}
		}
	}
	for _, c := range conns {
		_ = c.Close()
	}
}

func TestRebind(t *testing.T) {
	q := `SELECT a FROM t WHERE b = ? AND c IN (?, ?)`
	if got := sqliteDialect().rebind(q); got != q {
		t.Errorf("sqlite rebind = %q", got)
	}
	pg := postgresDialect()
	if got, want := pg.rebind(q), `SELECT a FROM t WHERE b = $1 AND c IN ($2, $3)`; got != want {
		t.Errorf("numbered rebind = %q, want %q", got, want)
	}
}

// TestOrdering checks that both backends sort text by code point, as SQLite's BINARY
// collation does, whatever the database's collation (see pgserver.NewDatabase).
func TestOrdering(t *testing.T) { forEachBackend(t, testOrdering) }

func testOrdering(t *testing.T, b backend) {
	ctx := context.Background()
	d := openTest(t, b)
	for _, id := range []string{"run-a", "run-B", "run-_", "run-é", "run-Z"} {
		if err := d.CreateRun(ctx, testRun(id, t0())); err != nil { // all started at once
			t.Fatal(err)
		}
	}
	for _, name := range []string{"a", "B", "_x", "é", "Z", "b"} {
		if err := d.AddTarget(ctx, record.Target{RunID: "run-a", Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	runs, err := d.Runs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	if got, want := strings.Join(ids, " "), "run-é run-a run-_ run-Z run-B"; got != want {
		t.Errorf("Runs: %s; want %s", got, want)
	}
	targets, err := d.Targets(ctx, "run-a")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tg := range targets {
		names = append(names, tg.Name)
	}
	if got, want := strings.Join(names, " "), "B Z _x a b é"; got != want {
		t.Errorf("Targets: %s; want %s", got, want)
	}
	// The ids an ambiguous prefix matches are named in the same order.
	if _, err := d.Run(ctx, "run-"); err == nil || !strings.Contains(err.Error(), "matches run-B, run-Z, ...") {
		t.Errorf("Run(ambiguous): err = %v", err)
	}
}
