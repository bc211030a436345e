package store

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/record"
)

// allBytes is every byte value once, so raw output holding it is not valid UTF-8 and has a
// NUL byte.
func allBytes() string {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	return string(b)
}

func TestCleanText(t *testing.T) {
	for in, want := range map[string]string{
		"":                  "",
		"plain é 🚀":         "plain é 🚀",
		"nul\x00here":       "nul\uFFFDhere",
		"bad \xff\xfe utf8": "bad \uFFFD utf8", // one replacement per invalid run
		"half \xc3":         "half \uFFFD",
		"\x00\x00":          "\uFFFD\uFFFD",
	} {
		if got := cleanText(in); got != want {
			t.Errorf("cleanText(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestUnusualText stores text PostgreSQL's TEXT cannot hold, in both backends: raw output
// comes back byte for byte, messages with the bytes replaced, and ids and names are refused
// without leaving anything behind.
func TestUnusualText(t *testing.T) { forEachBackend(t, testUnusualText) }

func testUnusualText(t *testing.T, b backend) {
	ctx := context.Background()
	d := openTest(t, b)
	run := testRun("r", t0())
	run.Note = "note \x00 \xff"
	if err := d.CreateRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	fp := map[string]string{"nul\x00key": "bad \xff value", "ok": "é"}
	if err := d.AddTarget(ctx, record.Target{RunID: "r", Name: "a", Fingerprint: fp}); err != nil {
		t.Fatal(err)
	}
	raws := []string{
		allBytes(),
		"iperf3 output\x00with a NUL and \xff\xfe invalid UTF-8 and a lone \x80, then é and 🚀\n",
		"\x00",
		"ends in half a character \xe2\x82",
		"",
	}
	for seq, raw := range raws {
		s := record.Sample{RunID: "r", Seq: seq, Target: "a", Started: t0(), Raw: raw, Error: "tool said \x00\xc3(",
			Metrics: map[string]float64{"x": float64(seq)}}
		if err := d.AddSample(ctx, s); err != nil {
			t.Fatalf("AddSample(raw %q): %v", raw, err)
		}
	}
	samples, err := d.Samples(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != len(raws) {
		t.Fatalf("%d samples, want %d", len(samples), len(raws))
	}
	for i, s := range samples {
		if s.Raw != raws[i] {
			t.Errorf("sample %d: raw %q, want %q", i, s.Raw, raws[i])
		}
		if want := "tool said \uFFFD\uFFFD("; s.Error != want {
			t.Errorf("sample %d: error %q, want %q", i, s.Error, want)
		}
	}
	if err := d.FinishRun(ctx, "r", record.StatusFailed, t0(), "failed: \xff"); err != nil {
		t.Fatal(err)
	}
	got, err := d.Run(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if got.Note != "failed: \uFFFD" {
		t.Errorf("note %q", got.Note)
	}
	targets, err := d.Targets(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	// encoding/json made the fingerprint valid UTF-8 on the way in, alike for both backends.
	if want := map[string]string{"nul\x00key": "bad \uFFFD value", "ok": "é"}; len(targets) != 1 ||
		!reflect.DeepEqual(targets[0].Fingerprint, want) {
		t.Errorf("targets = %+v, want fingerprint %q", targets, want)
	}

	// Refused: ids and names, which are looked up again.
	for name, err := range map[string]error{
		"run id":       d.CreateRun(ctx, testRun("r\x00", t0())),
		"suite":        d.CreateRun(ctx, record.Run{ID: "r2", Started: t0(), Suite: "\xff"}),
		"version":      d.CreateRun(ctx, record.Run{ID: "r3", Started: t0(), Version: "v\x00"}),
		"target name":  d.AddTarget(ctx, record.Target{RunID: "r", Name: "b\xff"}),
		"target's run": d.AddTarget(ctx, record.Target{RunID: "r\xff", Name: "b"}),
		"sample path":  d.AddSample(ctx, record.Sample{RunID: "r", Seq: 10, Target: "a", Path: "p\x00"}),
		"workload":     d.AddSample(ctx, record.Sample{RunID: "r", Seq: 11, Target: "a", Workload: "\xc3"}),
		"sample's run": d.AddSample(ctx, record.Sample{RunID: "\xff", Seq: 12, Target: "a"}),
		"metric name":  d.AddSample(ctx, record.Sample{RunID: "r", Seq: 13, Target: "a", Metrics: map[string]float64{"m\x00": 1}}),
		"resource":     d.AddSample(ctx, record.Sample{RunID: "r", Seq: 14, Target: "a", Resources: map[string]float64{"\xff": 1}}),
	} {
		if err == nil || !strings.Contains(err.Error(), "NUL byte or invalid UTF-8") {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	if runs, err := d.Runs(ctx); err != nil || len(runs) != 1 {
		t.Errorf("runs after refusals: %d, %v", len(runs), err)
	}
	if samples, err := d.Samples(ctx, "r"); err != nil || len(samples) != len(raws) {
		t.Errorf("samples after refusals: %d, %v", len(samples), err)
	}

	// Looking such ids up finds nothing rather than failing.
	for _, id := range []string{"r\x00", "\xff", "r\xc3"} {
		if _, err := d.Run(ctx, id); !errors.Is(err, ErrNotFound) {
			t.Errorf("Run(%q): err = %v", id, err)
		}
		if err := d.DeleteRun(ctx, id); !errors.Is(err, ErrNotFound) {
			t.Errorf("DeleteRun(%q): err = %v", id, err)
		}
		if err := d.FinishRun(ctx, id, record.StatusFailed, time.Time{}, ""); !errors.Is(err, ErrNotFound) {
			t.Errorf("FinishRun(%q): err = %v", id, err)
		}
		if tg, err := d.Targets(ctx, id); tg != nil || err != nil {
			t.Errorf("Targets(%q) = %v, %v", id, tg, err)
		}
		if s, err := d.Samples(ctx, id); s != nil || err != nil {
			t.Errorf("Samples(%q) = %v, %v", id, s, err)
		}
	}
}
