package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/store"
)

// reportStore makes a store holding two small runs and returns its location.
func reportStore(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	loc := filepath.Join(t.TempDir(), "results.db")
	db, err := store.Open(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for ri, id := range []string{"20260101-000000-aaaa", "20260102-000000-bbbb"} {
		start := time.Date(2026, 1, 1+ri, 0, 0, 0, 0, time.UTC)
		if err := db.CreateRun(ctx, record.Run{ID: id, Started: start, Status: record.StatusComplete, Seed: 7, Suite: "repetitions: 2\n"}); err != nil {
			t.Fatal(err)
		}
		if err := db.AddTarget(ctx, record.Target{RunID: id, Name: "local", Fingerprint: map[string]string{"cni": "bridge"}}); err != nil {
			t.Fatal(err)
		}
		seq := 0
		for _, path := range []string{"host-network", "cross-node"} {
			for round := 1; round <= 3; round++ {
				seq++
				s := record.Sample{RunID: id, Seq: seq, Round: round, Target: "local", Path: path, Workload: "tcp-stream/1",
					Started: start, Duration: time.Second, Metrics: map[string]float64{"throughput_gbps": 10 + float64(round+seq)},
					Resources: map[string]float64{"cpu_s_per_gb": 0.5}}
				if err := db.AddSample(ctx, s); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return loc
}

func runReport(args ...string) (string, error) {
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(append([]string{"report"}, args...))
	err := executeCommand(context.Background(), cmd)
	return out.String(), err
}

func TestReportCommand(t *testing.T) {
	loc := reportStore(t)
	dir := t.TempDir()

	html := filepath.Join(dir, "r.html")
	if _, err := runReport("20260101", "20260102-000000-bbbb", "--store", loc, "--file", html); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"<svg", "20260101-000000-aaaa/local", "20260102-000000-bbbb/local", "throughput_gbps"} {
		if !strings.Contains(string(page), s) {
			t.Errorf("HTML report lacks %q", s)
		}
	}

	md := filepath.Join(dir, "r.md")
	if _, err := runReport("20260101", "--store", loc, "--file", md); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(text), "| local | cross-node | throughput_gbps ↑ |") || strings.Contains(string(text), "<svg") {
		t.Errorf("Markdown report is not a table report:\n%s", text)
	}

	out, err := runReport("20260101", "--store", loc, "--file", "-", "-o", "html")
	if err != nil || !strings.HasPrefix(out, "<!DOCTYPE html>") {
		t.Errorf("--file - -o html: err %v, output %.60q", err, out)
	}
}

func TestReportCommandErrors(t *testing.T) {
	loc := reportStore(t)
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"20260101", "--store", loc}, "--file is required"},
		{[]string{"20260101", "--store", loc, "--file", filepath.Join(dir, "r.txt")}, "--file " + filepath.Join(dir, "r.txt")},
		{[]string{"20260101", "--store", loc, "--file", filepath.Join(dir, "r.html"), "-o", "pdf"}, `-o "pdf": expected html, md`},
		// The file where -o took it before -o was the format in every command.
		{[]string{"20260101", "--store", loc, "-o", filepath.Join(dir, "r.html")}, "the file goes in --file " + filepath.Join(dir, "r.html")},
		{[]string{"20260101", "--store", loc, "--file", "-"}, "needs -o html"},
		{[]string{"2026", "--store", loc, "--file", filepath.Join(dir, "r.html")}, "ambiguous"},
		{[]string{"nope", "--store", loc, "--file", filepath.Join(dir, "r.html")}, "not found"},
		{[]string{"20260101", "--store", filepath.Join(dir, "missing.db"), "--file", filepath.Join(dir, "r.html")}, "--store"},
	} {
		_, err := runReport(c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("report %v: error %v, want one containing %q", c.args, err, c.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("failed reports left files behind: %v", entries)
	}
}
