package compare

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/stats"
	"github.com/cnibench/cnibench/internal/store"
	"github.com/cnibench/cnibench/internal/testsupport/seedstore"
)

const (
	run1 = "20261121-100000-ab12" // two targets: bridge and cilium-vxlan
	run2 = "20261122-100000-cd34" // one target: bridge
)

// fill creates the store the tests compare in. In run1, cilium-vxlan (B) against bridge (A):
//   - tcp-stream/1 cross-node throughput_gbps 12±0.3 vs 10±0.3: clearly better (ratio 1.2);
//   - cpu_s_per_gb 1.3±0.05 vs 1.0±0.05, lower is better: clearly worse (ratio 1.3);
//   - tcp-rr/1 cross-node latency_p50_us 50±5 vs 50±5 (other order): no difference;
//   - custom_score, a metric of unknown direction: n/a with a ratio;
//   - transactions_per_s with a single B sample, and retransmits all 0: n/a, no ratio;
//   - bridge's same-node cell, which cilium-vxlan lacks: listed as A only;
//   - one failed B sample and a warm-up sample per cell at 1000 times the values.
func fill(t *testing.T) *store.DB {
	t.Helper()
	ctx := context.Background()
	db := seedstore.TempStore(t)
	const n = 8
	stream := func(target, path string, gbps, cpu float64) seedstore.Cell {
		return seedstore.Cell{Target: target, Path: path, Workload: "tcp-stream/1",
			Metrics: map[string][]float64{"throughput_gbps": seedstore.Normal(n, gbps, 0.3), "custom_score": seedstore.Normal(n, 3, 0.5),
				"retransmits": make([]float64, n)},
			Resources: map[string][]float64{"cpu_s_per_gb": seedstore.Normal(n, cpu, 0.05)}}
	}
	rr := func(target string, reversed bool) seedstore.Cell {
		lat := seedstore.Normal(n, 50, 5)
		tps := seedstore.Normal(n, 20000, 500)
		if reversed {
			for i, j := 0, len(lat)-1; i < j; i, j = i+1, j-1 {
				lat[i], lat[j] = lat[j], lat[i]
			}
			tps = tps[:1]
		}
		return seedstore.Cell{Target: target, Path: "cross-node", Workload: "tcp-rr/1",
			Metrics: map[string][]float64{"latency_p50_us": lat, "transactions_per_s": tps}}
	}
	cilium := stream("cilium-vxlan", "cross-node", 12, 1.3)
	cilium.Failed = 1
	err := seedstore.Add(ctx, db, seedstore.Run{ID: run1, Started: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC),
		Targets: []record.Target{
			{Name: "bridge", Fingerprint: map[string]string{"cni": "bridge", "kernel": "6.1.0"}},
			{Name: "cilium-vxlan", Fingerprint: map[string]string{"cni": "cilium", "kernel": "6.1.0", "tunnel": "vxlan"}}},
		Cells: []seedstore.Cell{stream("bridge", "cross-node", 10, 1.0), cilium, stream("bridge", "same-node", 30, 0.5),
			rr("bridge", false), rr("cilium-vxlan", true)}})
	if err != nil {
		t.Fatal(err)
	}
	err = seedstore.Add(ctx, db, seedstore.Run{ID: run2, Started: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC),
		Targets: []record.Target{{Name: "bridge", Fingerprint: map[string]string{"cni": "bridge", "kernel": "6.1.0"}}},
		Cells:   []seedstore.Cell{stream("bridge", "cross-node", 10, 1.0)}})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func sideOf(t *testing.T, arg string) Side {
	t.Helper()
	s, err := ParseSide(arg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func rowOf(t *testing.T, res Result, workload, path, metric string) Row {
	t.Helper()
	for _, r := range res.Rows {
		if r.Workload == workload && r.Path == path && r.Metric == metric {
			return r
		}
	}
	t.Fatalf("no row %s %s %s in %+v", workload, path, metric, res.Rows)
	return Row{}
}

func targets(t *testing.T, db *store.DB) Result {
	t.Helper()
	res, err := Compare(context.Background(), db, Options{A: sideOf(t, run1+"/bridge"), B: sideOf(t, "20261121/cilium-vxlan"), Seed: DefaultSeed})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestCompareTargetsOfOneRun(t *testing.T) {
	res := targets(t, fill(t))
	if res.A.Label() != run1+"/bridge" || res.B.Label() != run1+"/cilium-vxlan" || res.Seed != DefaultSeed ||
		res.Resamples != stats.DefaultResamples || res.Alpha != stats.DefaultAlpha {
		t.Errorf("sides and settings: %+v %+v seed %d %d %v", res.A, res.B, res.Seed, res.Resamples, res.Alpha)
	}
	checks := []struct {
		workload, metric, verdict, direction string
		trueRatio                            float64
	}{
		{"tcp-stream/1", "throughput_gbps", stats.VerdictBetter, "higher", 1.2},
		{"tcp-stream/1", "cpu_s_per_gb", stats.VerdictWorse, "lower", 1.3},
		{"tcp-rr/1", "latency_p50_us", stats.VerdictNone, "lower", 1},
		{"tcp-stream/1", "custom_score", VerdictNA, "", 1},
	}
	for _, c := range checks {
		r := rowOf(t, res, c.workload, "cross-node", c.metric)
		if r.Verdict != c.verdict || r.Direction != c.direction {
			t.Errorf("%s: verdict %q direction %q, want %q %q (%+v)", c.metric, r.Verdict, r.Direction, c.verdict, c.direction, r)
		}
		if !(r.RatioLow <= c.trueRatio && c.trueRatio <= r.RatioHigh) || !(r.RatioLow <= r.Ratio && r.Ratio <= r.RatioHigh) {
			t.Errorf("%s: ratio %v [%v, %v] does not bracket the true ratio %v", c.metric, r.Ratio, r.RatioLow, r.RatioHigh, c.trueRatio)
		}
		// Warm-up samples (1000x) left out, the failed sample counted apart.
		if r.NA != 8 || r.NB != 8 || r.MeanA > 100 || r.MeanB > 100 && c.metric != "latency_p50_us" {
			t.Errorf("%s: n %d/%d, means %v/%v", c.metric, r.NA, r.NB, r.MeanA, r.MeanB)
		}
	}
	tp := rowOf(t, res, "tcp-stream/1", "cross-node", "throughput_gbps")
	if tp.FailedA != 0 || tp.FailedB != 1 || tp.Unit != "Gbit/s" || tp.PValue >= 0.01 || tp.MeanA < 9.99 || tp.MeanA > 10.01 {
		t.Errorf("throughput row: %+v", tp)
	}
	if c := rowOf(t, res, "tcp-stream/1", "cross-node", "custom_score"); c.Note == "" || c.Unit != "" {
		t.Errorf("custom_score: %+v", c)
	}
	if z := rowOf(t, res, "tcp-stream/1", "cross-node", "retransmits"); z.Verdict != VerdictNA || z.Note != "mean of A is 0: no ratio" {
		t.Errorf("all-zero row: %+v", z)
	}
	tps := rowOf(t, res, "tcp-rr/1", "cross-node", "transactions_per_s")
	if tps.Verdict != VerdictNA || tps.NB != 1 || !strings.Contains(tps.Note, "at least 2 samples per side, has 8 and 1") || tps.Ratio == tps.Ratio {
		t.Errorf("single-sample row: %+v", tps)
	}
	if want := (Summary{Better: 1, Worse: 1, NoDifference: 1, NA: 3}); res.Summary != want {
		t.Errorf("summary %+v, want %+v", res.Summary, want)
	}
	if want := []Cell{{Path: "same-node", Workload: "tcp-stream/1", Pairs: 1}}; !reflect.DeepEqual(res.OnlyA, want) || len(res.OnlyB) != 0 {
		t.Errorf("only A %v, only B %v", res.OnlyA, res.OnlyB)
	}
	if want := []Difference{{"cni", "bridge", "cilium"}, {"tunnel", "", "vxlan"}}; !reflect.DeepEqual(res.FingerprintDiff, want) {
		t.Errorf("fingerprint diff %v", res.FingerprintDiff)
	}
	// tcp-rr/1 sorts before tcp-stream/1; the workload's own metrics before the costs.
	var order []string
	for _, r := range res.Rows {
		order = append(order, r.Workload+" "+r.Metric)
	}
	want := []string{"tcp-rr/1 transactions_per_s", "tcp-rr/1 latency_p50_us", "tcp-stream/1 throughput_gbps",
		"tcp-stream/1 retransmits", "tcp-stream/1 cpu_s_per_gb", "tcp-stream/1 custom_score"}
	if !reflect.DeepEqual(order, want) {
		t.Errorf("row order %v, want %v", order, want)
	}
}

func TestCompareAcrossRuns(t *testing.T) {
	db := fill(t)
	// run2 has one target, so it needs none named.
	res, err := Compare(context.Background(), db, Options{A: sideOf(t, run1+"/bridge"), B: sideOf(t, "20261122"), Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	if res.B.Run != run2 || res.B.Target != "bridge" || len(res.FingerprintDiff) != 0 {
		t.Errorf("B: %+v, diff %v", res.B, res.FingerprintDiff)
	}
	// Same distributions on both sides.
	for _, r := range res.Rows {
		if r.Verdict == stats.VerdictBetter || r.Verdict == stats.VerdictWorse {
			t.Errorf("%s: %s with identical distributions", r.Metric, r.Verdict)
		}
	}
}

func TestCompareDeterministic(t *testing.T) {
	db := fill(t)
	a, b := targets(t, db), targets(t, db)
	if !reflect.DeepEqual(jsonOf(t, a), jsonOf(t, b)) {
		t.Error("two comparisons with the same seed differ")
	}
	other, err := Compare(context.Background(), db, Options{A: sideOf(t, run1+"/bridge"), B: sideOf(t, run1+"/cilium-vxlan"), Seed: 99})
	if err != nil {
		t.Fatal(err)
	}
	r1, r2 := rowOf(t, a, "tcp-stream/1", "cross-node", "throughput_gbps"), rowOf(t, other, "tcp-stream/1", "cross-node", "throughput_gbps")
	// The ratio interval is Welch's on the log scale: no resampling, so the seed changes
	// nothing where both means are positive.
	if r1.RatioLow != r2.RatioLow || r1.Verdict != r2.Verdict || r1.PValue != r2.PValue {
		t.Errorf("seed 1 vs 99: %+v vs %+v", r1, r2)
	}
	// Filtering does not change a row's figures, since every row uses the same seed; only the
	// adjusted p-value, whose family shrinks to the one row.
	only, err := Compare(context.Background(), db, Options{A: sideOf(t, run1+"/bridge"), B: sideOf(t, run1+"/cilium-vxlan"),
		Metrics: []string{"throughput_gbps"}, Seed: DefaultSeed})
	if err != nil {
		t.Fatal(err)
	}
	if len(only.Rows) != 1 || only.Rows[0].PAdjusted != only.Rows[0].PValue {
		t.Fatalf("a family of one row keeps its p: %+v", only.Rows)
	}
	r1.PAdjusted = r1.PValue
	if got := only.Rows[0]; math.IsNaN(got.U) && math.IsNaN(r1.U) {
		// Paired rows have no U; NaN never equals itself.
		only.Rows[0].U, r1.U = 0, 0
	}
	if !reflect.DeepEqual(only.Rows[0], r1) {
		t.Errorf("--metrics throughput_gbps: %+v, want just %+v", only.Rows, r1)
	}
}

// The adjustment withdraws verdicts whose p-value only looks small among many, keeps those
// that stand out as a family, leaves rows without a verdict out, and adjusts each workload and
// path on its own.
func TestAdjustWithdrawsChanceVerdicts(t *testing.T) {
	row := func(workload string, p float64, verdict string) Row {
		return Row{Path: "cross-node", Workload: workload, PValue: p, Verdict: verdict}
	}
	// One "worse" at p = 0.04 among nine clear non-differences: chance, by either method.
	lone := []Row{row("w", 0.04, stats.VerdictWorse), row("w", math.NaN(), VerdictNA), row("w", 0.9, VerdictNA)}
	for range 9 {
		lone = append(lone, row("w", 0.5, stats.VerdictNone))
	}
	// Ten rows at p = 0.008, the floor of 5 vs 5 runs: Benjamini-Hochberg keeps all ten
	// (0.008 * 10/10), Holm none (0.008 * 10).
	floor := make([]Row, 10)
	for i := range floor {
		floor[i] = row("w", 0.008, stats.VerdictBetter)
	}
	// The same "worse" alone in its workload is a family of one, whatever the other holds.
	apart := slices.Clone(lone)
	apart[0].Workload = "v"
	for _, c := range []struct {
		name, method string
		rows         []Row
		verdicts     int
	}{
		{"lone", stats.AdjustNone, lone, 1}, {"lone", stats.AdjustBH, lone, 0}, {"lone", stats.AdjustHolm, lone, 0},
		{"floor", stats.AdjustNone, floor, 10}, {"floor", stats.AdjustBH, floor, 10}, {"floor", stats.AdjustHolm, floor, 0},
		{"apart", stats.AdjustBH, apart, 1}, {"apart", stats.AdjustHolm, apart, 1},
	} {
		rows := slices.Clone(c.rows)
		if err := adjust(rows, c.method, stats.DefaultAlpha); err != nil {
			t.Fatal(err)
		}
		verdicts := 0
		for i, r := range rows {
			if r.Verdict == stats.VerdictBetter || r.Verdict == stats.VerdictWorse {
				verdicts++
			}
			if (c.rows[i].Verdict == VerdictNA) != (r.Verdict == VerdictNA) || (r.Verdict == VerdictNA) != math.IsNaN(r.PAdjusted) {
				t.Errorf("%s, %s: row %d %+v, was %+v", c.name, c.method, i, r, c.rows[i])
			}
		}
		if verdicts != c.verdicts {
			t.Errorf("%s, %s: %d verdicts, want %d", c.name, c.method, verdicts, c.verdicts)
		}
	}
}

func TestCompareErrors(t *testing.T) {
	db := fill(t)
	for _, c := range []struct {
		a, b    string
		metrics []string
		want    []string
		is      error
	}{
		{a: run1, b: run2, want: []string{`A "` + run1 + `"`, "2 targets (bridge, cilium-vxlan)", run1 + "/TARGET"}},
		{a: run2, b: run1 + "/flannel", want: []string{`B "`, `no target "flannel"`, "bridge, cilium-vxlan"}},
		{a: "2026112", b: run2, want: []string{`A "2026112"`}, is: store.ErrAmbiguous},
		{a: run2, b: "1999", want: []string{`B "1999"`}, is: store.ErrNotFound},
		{a: run2, b: run2, metrics: []string{"throughput_gbps", "bogus"}, want: []string{"metrics: ", `"bogus"`, "throughput_gbps"}},
	} {
		_, err := Compare(context.Background(), db, Options{A: sideOf(t, c.a), B: sideOf(t, c.b), Metrics: c.metrics})
		if err == nil {
			t.Errorf("%s vs %s: no error", c.a, c.b)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s vs %s: error %q lacks %q", c.a, c.b, err, w)
			}
		}
		if c.is != nil && !errors.Is(err, c.is) {
			t.Errorf("%s vs %s: error %v is not %v", c.a, c.b, err, c.is)
		}
	}
}

func TestParseSide(t *testing.T) {
	for arg, want := range map[string]Side{"abc": {Run: "abc"}, "abc/def": {"abc", "def"}, "abc/d/e": {"abc", "d/e"}} {
		if got, err := ParseSide(arg); err != nil || got != want || got.String() != arg {
			t.Errorf("ParseSide(%q) = %+v, %v", arg, got, err)
		}
	}
	for _, arg := range []string{"", "/x", "abc/"} {
		if _, err := ParseSide(arg); err == nil {
			t.Errorf("ParseSide(%q): no error", arg)
		}
	}
}

func jsonOf(t *testing.T, res Result) map[string]any {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, FormatJSON, res); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("JSON does not parse: %v\n%s", err, buf.String())
	}
	return doc
}

func TestWriteJSON(t *testing.T) {
	doc := jsonOf(t, targets(t, fill(t)))
	if doc["seed"] != float64(DefaultSeed) || doc["resamples"] != float64(stats.DefaultResamples) || doc["confidence"] != 0.95 ||
		doc["p_adjust"] != "bh" || doc["p_adjust_family"] != Family {
		t.Errorf("settings: seed %v resamples %v confidence %v adjust %v over %v", doc["seed"], doc["resamples"],
			doc["confidence"], doc["p_adjust"], doc["p_adjust_family"])
	}
	want := map[string]any{"better": 1.0, "worse": 1.0, "no_significant_difference": 1.0, "untestable": 0.0, "n/a": 3.0}
	if !reflect.DeepEqual(doc["summary"], want) {
		t.Errorf("summary %v", doc["summary"])
	}
	if a := doc["a"].(map[string]any); a["run"] != run1 || a["target"] != "bridge" {
		t.Errorf("a: %v", a)
	}
	rows := doc["rows"].([]any)
	if len(rows) != 6 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, x := range rows {
		r := x.(map[string]any)
		for _, k := range []string{"workload", "path", "metric", "unit", "direction", "n_a", "n_b", "mean_a", "mean_b",
			"ratio", "ratio_low", "ratio_high", "p_value", "p_adjusted", "verdict"} {
			if _, ok := r[k]; !ok {
				t.Errorf("row %v lacks %q", r["metric"], k)
			}
		}
		switch r["metric"] {
		case "throughput_gbps":
			if r["verdict"] != "better" || r["n_b"] != 8.0 || r["failed_b"] != 1.0 || r["ratio_low"].(float64) > 1.2 ||
				r["p_adjusted"].(float64) < r["p_value"].(float64) {
				t.Errorf("throughput row %v", r)
			}
		case "transactions_per_s":
			// Not computable: null, never NaN (which JSON cannot carry).
			if r["ratio"] != nil || r["p_value"] != nil || r["p_adjusted"] != nil || r["verdict"] != "n/a" || r["note"] == "" {
				t.Errorf("single-sample row %v", r)
			}
		}
	}
	if only := doc["only_a"].([]any); len(only) != 1 {
		t.Errorf("only_a %v", only)
	}
}

func TestWriteMarkdown(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, FormatMarkdown, targets(t, fill(t))); err != nil {
		t.Fatal(err)
	}
	md := buf.String()
	for _, want := range []string{"`" + run1 + "/cilium-vxlan` vs `" + run1 + "/bridge`",
		"**B vs A: 1 better, 1 worse, 1 no significant difference, 3 n/a.**",
		"| cni | bridge | cilium |", "| tunnel | - | vxlan |", "**better**", "**worse**",
		"throughput_gbps [Gbit/s]", "8 (+1 failed)", "ratio of the means in every row", "Measured by A only (not compared): `tcp-stream/1 same-node`"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	// Every table has the same number of cells in each of its lines.
	cols := -1
	for _, line := range strings.Split(md, "\n") {
		if !strings.HasPrefix(line, "|") {
			cols = -1
			continue
		}
		n := strings.Count(strings.ReplaceAll(line, `\|`, ""), "|")
		if cols >= 0 && n != cols {
			t.Errorf("line has %d separators, its table %d: %s", n, cols, line)
		}
		cols = n
	}
	if t.Failed() {
		t.Log(md)
	}
}

func TestWriteTable(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, FormatTable, targets(t, fill(t))); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"A  " + run1 + "/bridge", "cni: bridge -> cilium", "WORKLOAD", "95% CI",
		"B vs A: 1 better, 1 worse, 1 no significant difference, 3 n/a", "better", "worse", "ratio of the means in every row", "P ADJ",
		"p < 0.05 after the Benjamini-Hochberg adjustment within each workload and path"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	// Without an adjustment there is no column for it, and the method says so.
	res, err := Compare(context.Background(), fill(t), Options{A: sideOf(t, run1+"/bridge"), B: sideOf(t, run1+"/cilium-vxlan"),
		Adjust: stats.AdjustNone})
	if err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	if err := Write(&buf, FormatTable, res); err != nil {
		t.Fatal(err)
	}
	if out := buf.String(); strings.Contains(out, "P ADJ") || !strings.Contains(out, "p < 0.05, unadjusted for the number of rows,") {
		t.Errorf("unadjusted table:\n%s", out)
	}
	if _, err := Compare(context.Background(), fill(t), Options{Adjust: "sidak"}); err == nil || !strings.Contains(err.Error(), "bh, holm, none") {
		t.Errorf("unknown adjustment: %v", err)
	}
	if err := Write(&buf, "html", Result{}); err == nil || !strings.Contains(err.Error(), `output: "html"`) {
		t.Errorf("Write(html): err = %v", err)
	}
}

// The setup figures, measured once per target and round, follow the measured workloads, whose
// decided headlines a reader looks for first.
func TestSetupRowsLast(t *testing.T) {
	rows := []Row{
		{Path: "setup", Workload: "network-readiness", Metric: "network_ready_ms"},
		{Path: "cross-node", Workload: "tcp-stream/1", Metric: "throughput_gbps"},
		{Path: "setup", Workload: "pod-startup", Metric: "pod_ready_p50_ms"},
		{Path: "cross-node", Workload: "tcp-crr/64B", Metric: "connections_per_s"},
	}
	sortRows(rows)
	var got []string
	for _, r := range rows {
		got = append(got, r.Workload)
	}
	if want := "tcp-crr/64B tcp-stream/1 network-readiness pod-startup"; strings.Join(got, " ") != want {
		t.Errorf("order %q, want %q", strings.Join(got, " "), want)
	}
}
