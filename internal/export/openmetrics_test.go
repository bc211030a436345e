package export

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/record"
)

// omParser parses OpenMetrics text from stdin with prometheus_client's parser and prints the
// families as JSON. Timestamps are printed as [seconds, nanoseconds] so nothing is rounded.
const omParser = `
import json, sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
out = []
for f in text_string_to_metric_families(sys.stdin.read()):
    samples = []
    for s in f.samples:
        ts = s.timestamp
        if ts is not None and hasattr(ts, "sec"):
            ts = [ts.sec, ts.nsec]
        samples.append({"name": s.name, "labels": s.labels, "value": s.value, "ts": ts})
    out.append({"name": f.name, "type": f.type, "unit": f.unit, "help": f.documentation, "samples": samples})
print(json.dumps(out))
`

type omFamily struct {
	Name, Type, Unit, Help string
	Samples                []struct {
		Name   string
		Labels map[string]string
		Value  float64
		TS     []int64
	}
}

// parsers returns the Python interpreters that have prometheus_client: the one on PATH
// (often a pyenv or venv Python with the PyPI package) and Debian's (python3-prometheus-client),
// which may be different versions of the parser. The test skips only without python3.
func parsers(t *testing.T) []string {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not found: cannot run prometheus_client's OpenMetrics parser")
	}
	var found []string
	seen := map[string]bool{}
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		out, err := exec.Command(py, "-c", "import prometheus_client, sys; print(sys.executable)").Output()
		if err != nil || seen[strings.TrimSpace(string(out))] {
			continue
		}
		seen[strings.TrimSpace(string(out))] = true
		found = append(found, py)
	}
	if len(found) == 0 {
		t.Fatal("python3 has no prometheus_client: pip install prometheus-client (or apt-get install python3-prometheus-client)")
	}
	return found
}

// parseOM runs the real parser over text and fails the test if it refuses it.
func parseOM(t *testing.T, py, text string) map[string]omFamily {
	t.Helper()
	cmd := exec.Command(py, "-c", omParser)
	cmd.Stdin = strings.NewReader(text)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: prometheus_client cannot parse the export: %v\n%s\n%s", py, err, stderr.String(), text)
	}
	var families []omFamily
	if err := json.Unmarshal(out, &families); err != nil {
		t.Fatal(err)
	}
	byName := map[string]omFamily{}
	for _, f := range families {
		if _, dup := byName[f.Name]; dup {
			t.Errorf("family %s appears twice", f.Name)
		}
		byName[f.Name] = f
	}
	return byName
}

func TestOpenMetrics(t *testing.T) {
	b := load(t, fill(t), runA)
	var buf bytes.Buffer
	if err := WriteOpenMetrics(&buf, b); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	if !strings.HasSuffix(text, "\n# EOF\n") {
		t.Errorf("export does not end with # EOF")
	}
	for _, py := range parsers(t) {
		t.Run(py, func(t *testing.T) { checkOpenMetrics(t, b, parseOM(t, py, text)) })
	}
	if t.Failed() {
		t.Logf("export:\n%s", text)
	}
}

func checkOpenMetrics(t *testing.T, b Bundle, fams map[string]omFamily) {
	bySeq := map[string]record.Sample{}
	for _, s := range b.Samples {
		bySeq[fmt.Sprint(s.Seq)] = s
	}
	tp := fams["cnibench_throughput_gbps"]
	// 3 cells x 5 measured rounds; warm-up and failed samples are left out.
	if tp.Type != "gauge" || tp.Unit != "" || len(tp.Samples) != 15 || !strings.Contains(tp.Help, "Gbit/s") {
		t.Fatalf("throughput family: %s %q %d samples, help %q", tp.Type, tp.Unit, len(tp.Samples), tp.Help)
	}
	for _, p := range tp.Samples {
		s, ok := bySeq[p.Labels["seq"]]
		if !ok || s.Warmup || s.Error != "" {
			t.Fatalf("point for seq %q, which is not a measured sample", p.Labels["seq"])
		}
		want := map[string]string{"run": runA, "target": s.Target, "path": s.Path, "workload": s.Workload, "pairs": fmt.Sprint(s.Cell().Pairs),
			"round": fmt.Sprint(s.Round), "seq": fmt.Sprint(s.Seq)}
		if fmt.Sprint(p.Labels) != fmt.Sprint(want) || p.Value != s.Metrics["throughput_gbps"] {
			t.Errorf("point %v = %v, want %v = %v", p.Labels, p.Value, want, s.Metrics["throughput_gbps"])
		}
		if len(p.TS) != 2 || p.TS[0] != s.Started.Unix() || p.TS[1] != int64(s.Started.Nanosecond()) {
			t.Errorf("seq %d: timestamp %v, want %v", s.Seq, p.TS, s.Started)
		}
	}
	if f := fams["cnibench_host_cpu_seconds"]; f.Unit != "seconds" || len(f.Samples) != 15 {
		t.Errorf("host_cpu_seconds: unit %q, %d samples", f.Unit, len(f.Samples))
	}
	if f := fams["cnibench_cpu_s_per_gb"]; f.Type != "gauge" || len(f.Samples) != 15 {
		t.Errorf("cpu_s_per_gb (a resource): %s, %d samples", f.Type, len(f.Samples))
	}

	// Summaries: one point per cell; the mean is that of the measured values only.
	mean := fams["cnibench_throughput_gbps_mean"]
	n := fams["cnibench_throughput_gbps_n"]
	if mean.Type != "gauge" || len(mean.Samples) != 3 || len(n.Samples) != 3 {
		t.Fatalf("summary families: mean %+v, n %+v", mean, n)
	}
	for _, p := range mean.Samples {
		if p.Labels["path"] == "cross-node" && p.Labels["target"] == "bridge" && (p.Value < 9.99 || p.Value > 10.01) {
			t.Errorf("bridge cross-node mean = %v, want 10 (warm-up left out)", p.Value)
		}
		if _, has := p.Labels["seq"]; has {
			t.Errorf("summary point has a seq label: %v", p.Labels)
		}
	}
	for _, p := range n.Samples {
		if p.Value != 5 {
			t.Errorf("n = %v for %v, want 5", p.Value, p.Labels)
		}
	}
	for _, stat := range []string{"median", "ci95_low", "ci95_high"} {
		if f := fams["cnibench_throughput_gbps_"+stat]; len(f.Samples) != 3 {
			t.Errorf("%s: %d points, want 3", stat, len(f.Samples))
		}
	}

	// Info families: label values come back exactly, whatever they contain.
	run := fams["cnibench_run"]
	if run.Type != "info" || len(run.Samples) != 1 || run.Samples[0].Labels["run"] != runA || run.Samples[0].Labels["seed"] != "42" {
		t.Errorf("run info: %+v", run)
	}
	tgt := fams["cnibench_target"]
	if tgt.Type != "info" || len(tgt.Samples) != 2 {
		t.Fatalf("target info: %+v", tgt)
	}
	bridge := tgt.Samples[0].Labels
	if bridge["target"] != "bridge" || bridge["kernel"] != trickyFingerprint()["kernel"] || bridge["pod_mtu"] != "1500" ||
		bridge["run"] != runA {
		t.Errorf("bridge target labels: %q", bridge)
	}
}

// TestOpenMetricsEscaping puts OpenMetrics syntax into every label value and a metric name
// that needs sanitizing.
func TestOpenMetricsEscaping(t *testing.T) {
	tricky := "a\"b\\c\nd}e,f=g"
	started := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	b := Bundle{Run: record.Run{ID: "r1", Started: started, Status: "complete", Version: tricky},
		Targets: []record.Target{{Name: tricky, Fingerprint: map[string]string{"9-key.x": tricky, "__reserved": "x"}}},
		Samples: []record.Sample{{Seq: 1, Round: 1, Target: tricky, Path: tricky, Workload: tricky, Started: started,
			Metrics: map[string]float64{"weird-name.total": 1e300, "small": 1.5e-300, "zero": 0}}}}
	var buf bytes.Buffer
	if err := WriteOpenMetrics(&buf, b); err != nil {
		t.Fatal(err)
	}
	for _, py := range parsers(t) {
		fams := parseOM(t, py, buf.String())
		p := fams["cnibench_weird_name_total"].Samples
		if len(p) != 1 || p[0].Labels["target"] != tricky || p[0].Labels["path"] != tricky || p[0].Value != 1e300 ||
			len(p[0].TS) != 2 || p[0].TS[0] != started.Unix() {
			t.Errorf("%s: weird metric: %+v", py, p)
		}
		if v := fams["cnibench_small"].Samples[0].Value; v != 1.5e-300 {
			t.Errorf("%s: small = %v", py, v)
		}
		labels := fams["cnibench_target"].Samples[0].Labels
		if labels["_9_key_x"] != tricky || labels["__reserved"] != "" {
			t.Errorf("%s: target labels %q", py, labels)
		}
		if fams["cnibench_run"].Samples[0].Labels["version"] != tricky {
			t.Errorf("%s: run labels %q", py, fams["cnibench_run"].Samples[0].Labels)
		}
	}
}

func TestOpenMetricsNameClash(t *testing.T) {
	b := Bundle{Run: record.Run{ID: "r1"}, Samples: []record.Sample{{Seq: 1, Target: "t",
		Metrics: map[string]float64{"a-b": 1, "a.b": 2}}}}
	err := WriteOpenMetrics(&bytes.Buffer{}, b)
	if err == nil || !strings.Contains(err.Error(), "cnibench_a_b") {
		t.Errorf("clashing names: err = %v", err)
	}
	for _, names := range [][]string{{"run"}, {"x", "x_mean"}, {"target_info"}} {
		m := map[string]float64{}
		for _, n := range names {
			m[n] = 1
		}
		b.Samples[0].Metrics = m
		var buf bytes.Buffer
		if err := WriteOpenMetrics(&buf, b); err == nil || !strings.Contains(err.Error(), "already used") || buf.Len() != 0 {
			t.Errorf("metrics %v: err = %v, %d bytes written", names, err, buf.Len())
		}
	}
}

func TestTimestamp(t *testing.T) {
	for _, c := range []struct {
		t    time.Time
		want string
	}{
		{time.Unix(1763719200, 0), "1763719200"},
		{time.Unix(1763719200, 123456789), "1763719200.123456789"},
		{time.Unix(1763719200, 500000000), "1763719200.5"},
		{time.Unix(-2, 250000000), "-1.75"},
	} {
		if got := timestamp(c.t); got != c.want {
			t.Errorf("timestamp(%v) = %s, want %s", c.t, got, c.want)
		}
	}
}
