package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/export"
	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/store"
	"github.com/cnibench/cnibench/internal/testsupport/seedstore"
	"github.com/spf13/cobra"
)

const (
	cmdRun1 = "20261121-100000-ab12" // targets bridge and cilium-vxlan
	cmdRun2 = "20261121-110000-cd34" // target bridge
)

// testStore creates a store with two runs that share the prefix "20261121-1" and returns
// its path.
func testStore(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "results.db")
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cell := func(target string, gbps float64) seedstore.Cell {
		return seedstore.Cell{Target: target, Path: "cross-node", Workload: "tcp-stream/1",
			Metrics:   map[string][]float64{"throughput_gbps": seedstore.Normal(8, gbps, 0.3)},
			Resources: map[string][]float64{"cpu_s_per_gb": seedstore.Normal(8, 1, 0.05)}, Failed: 1}
	}
	started := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	if err := seedstore.Add(ctx, db, seedstore.Run{ID: cmdRun1, Started: started,
		Targets: []record.Target{{Name: "bridge"}, {Name: "cilium-vxlan"}},
		Cells:   []seedstore.Cell{cell("bridge", 10), cell("cilium-vxlan", 12)}}); err != nil {
		t.Fatal(err)
	}
	if err := seedstore.Add(ctx, db, seedstore.Run{ID: cmdRun2, Started: started.Add(time.Hour),
		Targets: []record.Target{{Name: "bridge"}}, Cells: []seedstore.Cell{cell("bridge", 10)}}); err != nil {
		t.Fatal(err)
	}
	return path
}

// execute runs a command in-process and returns what it printed on stdout.
func execute(t *testing.T, cmd *cobra.Command, args ...string) (string, error) {
	t.Helper()
	var out, stderr bytes.Buffer
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&stderr)
	err := executeCommand(context.Background(), cmd)
	return out.String(), err
}

func mustExecute(t *testing.T, cmd *cobra.Command, args ...string) string {
	t.Helper()
	out, err := execute(t, cmd, args...)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return out
}

func TestResultsList(t *testing.T) {
	path := testStore(t)
	out := mustExecute(t, newResultsCommand(), "list", "--store", path)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], cmdRun2) || !strings.Contains(lines[2], "bridge,cilium-vxlan") ||
		!strings.Contains(lines[2], "18 (2 failed)") || !strings.Contains(lines[2], "complete") {
		t.Errorf("list:\n%s", out)
	}
	out = mustExecute(t, newResultsCommand(), "list", "-o", "json", "--results", path) // the hidden alias
	var runs []map[string]any
	if err := json.Unmarshal([]byte(out), &runs); err != nil || len(runs) != 2 || runs[1]["samples"] != 18.0 {
		t.Errorf("list -o json: %v\n%s", err, out)
	}
	// $CNIBENCH_STORE is the default location.
	t.Setenv(store.EnvStore, path)
	if out := mustExecute(t, newResultsCommand(), "list"); !strings.Contains(out, cmdRun1) {
		t.Errorf("list with %s set:\n%s", store.EnvStore, out)
	}
	// Nothing stored yet: an empty list, and no database created.
	empty := filepath.Join(t.TempDir(), "none.db")
	if out := mustExecute(t, newResultsCommand(), "list", "--store", empty); strings.Count(out, "\n") != 1 {
		t.Errorf("list of a missing store:\n%s", out)
	}
	if _, err := os.Stat(empty); err == nil {
		t.Error("list created a store")
	}
	if _, err := execute(t, newResultsCommand(), "list", "-o", "yaml", "--store", path); err == nil || !strings.Contains(err.Error(), "-o") {
		t.Errorf("list -o yaml: err = %v", err)
	}
}

func TestResultsShow(t *testing.T) {
	path := testStore(t)
	out := mustExecute(t, newResultsCommand(), "show", "20261121-11", "--store", path)
	if !strings.Contains(out, "run "+cmdRun2) || !strings.Contains(out, "throughput_gbps") || !strings.Contains(out, "(+1 failed)") {
		t.Errorf("show:\n%s", out)
	}
	out = mustExecute(t, newResultsCommand(), "show", cmdRun1, "-o", "json", "--store", path)
	var doc struct {
		Run  map[string]any
		Rows []map[string]any
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Run["id"] != cmdRun1 || len(doc.Rows) != 4 {
		t.Fatalf("show -o json: %v\n%s", err, out)
	}
	checkSnakeCase(t, out)
	for _, r := range doc.Rows {
		// Warm-up samples (1000x the values) are not in the summary.
		if r["metric"] == "throughput_gbps" && (r["n"] != 8.0 || r["mean"].(float64) > 100) {
			t.Errorf("row %v", r)
		}
	}
	if out := mustExecute(t, newResultsCommand(), "show", cmdRun1, "-o", "yaml", "--store", path); !strings.Contains(out, "rows:") {
		t.Errorf("show -o yaml:\n%s", out)
	}
	_, err := execute(t, newResultsCommand(), "show", "20261121-1", "--store", path)
	if err == nil || !strings.Contains(err.Error(), "ambiguous") || !strings.Contains(err.Error(), cmdRun1) {
		t.Errorf("show with an ambiguous prefix: err = %v", err)
	}
	_, err = execute(t, newResultsCommand(), "show", cmdRun1, "--store", filepath.Join(t.TempDir(), "typo.db"))
	if err == nil || !strings.Contains(err.Error(), "--store") || !strings.Contains(err.Error(), "no results store") {
		t.Errorf("show with a missing store: err = %v", err)
	}
}

func TestResultsExport(t *testing.T) {
	path := testStore(t)
	out := mustExecute(t, newResultsCommand(), "export", cmdRun2, "-o", "csv", "--store", path)
	records, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	// 1 warm-up + 8 measured samples with 2 values each, 1 failed sample with none.
	if err != nil || len(records) != 1+9*2+1 || records[0][0] != "run" {
		t.Errorf("export csv: %v, %d records", err, len(records))
	}

	file := filepath.Join(t.TempDir(), "run.json")
	if out := mustExecute(t, newResultsCommand(), "export", cmdRun1, "-o", "json", "--file", file, "--store", path); out != "" {
		t.Errorf("export --file FILE printed %q", out)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := export.ReadJSON(f)
	if err != nil || b.Run.ID != cmdRun1 || len(b.Targets) != 2 || len(b.Samples) != 2+16+2 {
		t.Errorf("exported json: %v, run %s, %d targets, %d samples", err, b.Run.ID, len(b.Targets), len(b.Samples))
	}

	// --format, -o's former name, still works.
	out = mustExecute(t, newResultsCommand(), "export", cmdRun1, "--format", "openmetrics", "--store", path)
	if !strings.HasPrefix(out, "# TYPE cnibench_run info\n") || !strings.HasSuffix(out, "# EOF\n") ||
		strings.Count(out, "\ncnibench_throughput_gbps{") != 16 {
		t.Errorf("export openmetrics:\n%s", out)
	}

	_, err = execute(t, newResultsCommand(), "export", cmdRun1, "-o", "xml", "--store", path)
	if err == nil || !strings.Contains(err.Error(), `-o "xml": expected csv`) {
		t.Errorf("export -o xml: err = %v", err)
	}
	bad := filepath.Join(t.TempDir(), "missing-dir", "out.csv")
	if _, err = execute(t, newResultsCommand(), "export", cmdRun1, "-o", bad, "--store", path); err == nil ||
		!strings.Contains(err.Error(), "the file goes in --file "+bad) {
		t.Errorf("export -o FILE: err = %v", err)
	}
	if _, err = execute(t, newResultsCommand(), "export", cmdRun1, "--file", bad, "--store", path); err == nil ||
		!strings.Contains(err.Error(), "--file "+bad) {
		t.Errorf("export to a missing directory: err = %v", err)
	}
}

func TestResultsDelete(t *testing.T) {
	path := testStore(t)
	// An ambiguous prefix deletes nothing, not even the runs named before it.
	_, err := execute(t, newResultsCommand(), "delete", cmdRun2, "20261121-1", "--store", path)
	if err == nil || !strings.Contains(err.Error(), "nothing deleted") || !strings.Contains(err.Error(), "ambiguous") {
		t.Errorf("delete with an ambiguous prefix: err = %v", err)
	}
	if _, err = execute(t, newResultsCommand(), "delete", cmdRun2, "nope", "--store", path); err == nil {
		t.Error("delete of an unknown run: no error")
	}
	if out := mustExecute(t, newResultsCommand(), "list", "--store", path); strings.Count(out, "\n") != 3 {
		t.Fatalf("runs left after refused deletes:\n%s", out)
	}
	out := mustExecute(t, newResultsCommand(), "delete", "20261121-11", cmdRun2, "--store", path)
	if out != "deleted run "+cmdRun2+"\n" {
		t.Errorf("delete printed %q", out)
	}
	out = mustExecute(t, newResultsCommand(), "list", "--store", path)
	if strings.Contains(out, cmdRun2) || !strings.Contains(out, cmdRun1) {
		t.Errorf("after delete:\n%s", out)
	}
	if _, err := execute(t, newResultsCommand(), "delete", "--store", path); err == nil {
		t.Error("delete without arguments: no error")
	}
}

func TestCompareCommand(t *testing.T) {
	path := testStore(t)
	out := mustExecute(t, newCompareCommand(), cmdRun1+"/bridge", "20261121-10/cilium-vxlan", "--store", path)
	if !strings.Contains(out, "B vs A: 1 better, 0 worse, 1 no significant difference") {
		t.Errorf("compare:\n%s", out)
	}
	out = mustExecute(t, newCompareCommand(), cmdRun1+"/bridge", cmdRun2, "-o", "md", "--metrics", "throughput_gbps",
		"--seed", "5", "--store", path)
	if !strings.Contains(out, "| throughput_gbps [Gbit/s] |") || strings.Contains(out, "cpu_s_per_gb") {
		t.Errorf("compare -o md --metrics --seed:\n%s", out)
	}
	out = mustExecute(t, newCompareCommand(), cmdRun1+"/bridge", cmdRun1+"/cilium-vxlan", "--p-adjust", "none", "--store", path)
	if !strings.Contains(out, "unadjusted for the number of rows") {
		t.Errorf("compare --p-adjust none:\n%s", out)
	}
	// The gate passes what is within the tolerance, and what is better.
	mustExecute(t, newCompareCommand(), cmdRun1+"/cilium-vxlan", cmdRun1+"/bridge", "--fail-on", "worse", "--tolerance", "25%", "--store", path)
	mustExecute(t, newCompareCommand(), cmdRun1+"/bridge", cmdRun1+"/cilium-vxlan", "--fail-on", "worse", "--store", path)
	out = mustExecute(t, newCompareCommand(), cmdRun2, cmdRun1+"/bridge", "-o", "json", "--store", path)
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc["seed"] != 1.0 || doc["p_adjust"] != "bh" {
		t.Errorf("compare -o json: %v\n%s", err, out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{cmdRun1, cmdRun2}, "bridge, cilium-vxlan"},
		{[]string{cmdRun2 + "/", cmdRun2}, "argument A"},
		{[]string{cmdRun2, cmdRun2, "-o", "html"}, "-o"},
		{[]string{cmdRun2, cmdRun2, "--metrics", "nope"}, "--metrics"},
		{[]string{cmdRun2, cmdRun2, "--p-adjust", "bonferroni"}, `--p-adjust "bonferroni": expected one of bh, holm, none`},
		{[]string{cmdRun2}, "expected A and B, or one run B with --baseline"},
		{[]string{cmdRun2, cmdRun2, "--fail-on", "better"}, `--fail-on "better": expected one of never, worse`},
		{[]string{cmdRun2, cmdRun2, "--fail-on", "worse", "--tolerance", "five"}, `--tolerance "five": expected a percentage`},
		// bridge (10 Gbit/s) after cilium-vxlan (12): throughput 17 % worse.
		{[]string{cmdRun1 + "/cilium-vxlan", cmdRun1 + "/bridge", "--fail-on", "worse", "--tolerance", "5%"},
			"1 gated metric(s) of " + cmdRun1 + "/bridge worse than " + cmdRun1 + "/cilium-vxlan by more than 5 %"},
	} {
		_, err := execute(t, newCompareCommand(), append(c.args, "--store", path)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("compare %v: err = %v, want it to mention %q", c.args, err, c.want)
		}
	}
}

// checkSnakeCase fails for any key of a JSON document that is not snake_case: one style for
// every output a script reads.
func checkSnakeCase(t *testing.T, doc string) {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatal(err)
	}
	key := regexp.MustCompile(`^[a-z0-9]+(_[a-z0-9]+)*$`)
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if !key.MatchString(k) {
					t.Errorf("key %s.%s is not snake_case", path, k)
				}
				walk(path+"."+k, e)
			}
		case []any:
			for _, e := range v {
				walk(path+"[]", e)
			}
		}
	}
	walk("", v)
}
