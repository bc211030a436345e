package engine

import (
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/catalog"
	"github.com/cnibench/cnibench/internal/cluster/binaries"
)

// The parser takes each kernel's best rate over the sample's invocations, in decimal MB/s.
func TestStreamParse(t *testing.T) {
	out, err := os.ReadFile("testdata/stream-1thread-16M.txt")
	if err != nil {
		t.Fatal(err)
	}
	w := Workload{Kind: Stream, Threads: 1, MessageSize: 16 << 20, Duration: 2 * time.Second}
	m, err := stream{}.Parse(w, out)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]float64{catalog.StreamCopy: 33400, catalog.StreamScale: 34300, catalog.StreamAdd: 29600, catalog.StreamTriad: 32100} {
		if math.Abs(m[name]-want) > 1e-6 {
			t.Errorf("%s = %v, want the best of the invocations, %v", name, m[name], want)
		}
	}
	// An invocation cut short before its triad is a tool error, never three figures of four.
	cut := out[:strings.Index(string(out), "Triad")]
	var te *ToolError
	if _, err := (stream{}).Parse(w, cut); !errors.As(err, &te) {
		t.Errorf("a cut output: got %v, want a tool error", err)
	}
	if got, err := (stream{}).Parse(w, []byte("Copy 1.0 MiB rate 512 MB/s | t\nScale 1.0 MiB rate 900 KB/s | t\nAdd 1.0 MiB rate 2.5 TB/s | t\nTriad 1 MiB rate 1 bytes/s | t\n")); err != nil ||
		got[catalog.StreamCopy] != 512 || got[catalog.StreamScale] != 0.9 || got[catalog.StreamAdd] != 2.5e6 || got[catalog.StreamTriad] != 1e-6 {
		t.Errorf("units: %v, %v", got, err)
	}
}

func TestStreamWorkloads(t *testing.T) {
	for _, c := range []struct {
		w   Workload
		id  string
		err string
	}{
		{Workload{Kind: Stream, Duration: time.Second}, "stream/all", ""},
		{Workload{Kind: Stream, Threads: 2, MessageSize: 64 << 20, Duration: time.Second}, "stream/2x64M", ""},
		{Workload{Kind: Stream, MessageSize: 1000, Duration: time.Second}, "", "size: expected 0 (128M) or 1M-1024M"},
		{Workload{Kind: Stream, Threads: -1, Duration: time.Second}, "", "threads: expected 0 (one per CPU) to 256"},
		{Workload{Kind: Stream, Rate: "1G", Duration: time.Second}, "", "rate: expected empty for stream"},
	} {
		err := c.w.Validate()
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("Validate(%+v) = %v, want %q", c.w, err, c.err)
			}
			continue
		}
		if err != nil || c.w.ID() != c.id {
			t.Errorf("%+v: ID %q, %v; want %s", c.w, c.w.ID(), err, c.id)
		}
		if e, err := For(c.w); err != nil || e.Name() != NameStream || e.ServerArgv(c.w, 1) != nil {
			t.Errorf("For(%s) = %v, %v: want %s without a server", c.id, e, err, NameStream)
		}
	}
	argv := stream{}.ClientArgv(Workload{Kind: Stream, Threads: 2, Duration: 4 * time.Second}, "", 0)
	if !strings.Contains(argv[2], "+ 4)") || !strings.Contains(argv[2], "RAYON_NUM_THREADS=2 stream --size 16777216 --runs 10") {
		t.Errorf("stream argv %q", argv[2])
	}
	if argv := (stream{}).ClientArgv(Workload{Kind: Stream, Duration: time.Second}, "", 0); strings.Contains(argv[2], "RAYON") {
		t.Errorf("threads 0 must leave the worker count to rayon (one per CPU): %q", argv[2])
	}
}

// TestLiveStream runs the engine's own argv with the STREAM binary setup builds, and checks its
// figures against each other: STREAM moves the same bytes per element in copy and scale, and in
// add and triad, so neither pair can differ by a factor of two on one machine.
func TestLiveStream(t *testing.T) {
	bin := binaries.Default().Path(binaries.StreamBinary)
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("STREAM not built (scripts/setup.sh builds it): %v", err)
	}
	dir := t.TempDir()
	if err := os.Symlink(bin, filepath.Join(dir, "stream")); err != nil {
		t.Fatal(err)
	}
	w := Workload{Kind: Stream, Threads: 1, MessageSize: 16 << 20, Duration: time.Second}
	argv := stream{}.ClientArgv(w, "", 0)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %v\n%s", argv, err, out)
	}
	m, err := stream{}.Parse(w, out)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %v", w.ID(), m)
	for _, pair := range [][2]string{{catalog.StreamCopy, catalog.StreamScale}, {catalog.StreamAdd, catalog.StreamTriad}} {
		a, b := m[pair[0]], m[pair[1]]
		if a < 100 || b < 100 || a > 2*b || b > 2*a {
			t.Errorf("%s %.0f MB/s and %s %.0f MB/s: want both above 100 and within a factor of two", pair[0], a, pair[1], b)
		}
	}
}
