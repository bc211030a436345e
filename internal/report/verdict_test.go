package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cnibench/cnibench/internal/analysis"
	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/testsupport/seedstore"
)

// cellSamples makes n measured samples of one metric, plus a warm-up and a failed one that
// the verdict must ignore.
func cellSamples(target, path, workload, metric string, values []float64) []record.Sample {
	out := []record.Sample{
		{Target: target, Path: path, Workload: workload, Warmup: true, Metrics: map[string]float64{metric: 1e9}},
		{Target: target, Path: path, Workload: workload, Round: 1, Error: "boom"},
	}
	for _, v := range values {
		out = append(out, record.Sample{Target: target, Path: path, Workload: workload, Round: 1,
			Metrics: map[string]float64{metric: v, "retransmits": 3}})
	}
	return out
}

func TestVerdictRanksTargets(t *testing.T) {
	var samples []record.Sample
	samples = append(samples, cellSamples("bridge", "cross-node", "tcp-stream/1", "throughput_gbps", seedstore.Normal(8, 10, 0.3))...)
	samples = append(samples, cellSamples("cilium", "cross-node", "tcp-stream/1", "throughput_gbps", seedstore.Normal(8, 12, 0.3))...)
	samples = append(samples, cellSamples("flannel", "cross-node", "tcp-stream/1", "throughput_gbps", seedstore.Normal(8, 12, 0.3))...)
	lines := analysis.Verdict(samples)
	if len(lines) != 1 {
		t.Fatalf("%d lines, want 1: %+v", len(lines), lines)
	}
	l := lines[0]
	if l.Metric != "throughput_gbps" || l.Path != "cross-node" || len(l.Entries) != 3 {
		t.Fatalf("line %+v", l)
	}
	// cilium and flannel tie on the mean; the names break the tie.
	got := []string{}
	for _, e := range l.Entries {
		got = append(got, e.Target+":"+e.Verdict)
	}
	if want := "cilium:reference flannel:not significant bridge:worse"; strings.Join(got, " ") != want {
		t.Errorf("entries %q, want %q", strings.Join(got, " "), want)
	}
	if r := l.Entries[2].RatioToBest; r < 0.82 || r > 0.85 {
		t.Errorf("bridge at x%.3f of cilium, want 10/12", r)
	}
}

func TestVerdictPathsAgainstBaseline(t *testing.T) {
	var samples []record.Sample
	samples = append(samples, cellSamples("local", "host-network", "tcp-rr/64B", "latency_p50_us", seedstore.Normal(6, 20, 1))...)
	samples = append(samples, cellSamples("local", "same-node", "tcp-rr/64B", "latency_p50_us", seedstore.Normal(6, 20.2, 1))...)
	samples = append(samples, cellSamples("local", "cross-node", "tcp-rr/64B", "latency_p50_us", seedstore.Normal(6, 30, 1))...)
	samples = append(samples, cellSamples("local", "localhost", "tcp-rr/64B", "latency_p50_us", seedstore.Normal(6, 16, 1))...)
	samples = append(samples, cellSamples("local", "localhost", "tcp-stream/1", "throughput_gbps", seedstore.Normal(6, 25, 1))...)
	samples = append(samples, cellSamples("local", "host-network", "tcp-stream/1", "throughput_gbps", seedstore.Normal(6, 15, 1))...)
	lines := analysis.Verdict(samples)
	if len(lines) != 2 || lines[0].Workload != "tcp-rr/64B" || lines[0].Against != "host-network" || lines[0].Path != "" {
		t.Fatalf("lines %+v", lines)
	}
	verdicts := map[string]string{}
	for _, e := range lines[0].Entries {
		verdicts[e.Target] = e.Verdict
	}
	if verdicts["host-network"] != "reference" || verdicts["same-node"] != "not significant" || verdicts["cross-node"] != "worse" || verdicts["localhost"] != "better" {
		t.Errorf("verdicts %v", verdicts)
	}
	var buf bytes.Buffer
	doc := NewDocument(record.Run{ID: "r1"}, nil, samples)
	if err := Brief(&buf, doc); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"verdict: ", "tcp-rr/64B by path: latency_p50_us [µs, lower is better]", "worse (p=", "cnibench results show r1",
		"could detect"} {
		if !strings.Contains(out, want) {
			t.Errorf("brief output lacks %q:\n%s", want, out)
		}
	}
	// One row per path, its cells in columns: name, mean [CI], ratio, verdict, n.
	rows := map[string][]string{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(line, "  ") && strings.HasPrefix(f[len(f)-1], "n=") {
			rows[f[0]+" "+f[1]] = f
		}
	}
	for _, want := range []string{"host-network 20", "cross-node 30", "localhost 16", "same-node 20.2"} {
		if rows[want] == nil {
			t.Errorf("no row %q in:\n%s", want, out)
		}
	}
	if f := rows["host-network 20"]; f != nil && (f[4] != "x1.00" || f[5] != "baseline") {
		t.Errorf("host-network row %q: want the baseline at x1.00", f)
	}
	// The floor of a latency, not of a throughput, which localhost bounds from above.
	if strings.Count(out, "(floor)") != 1 || !strings.Contains(strings.Join(rows["localhost 16"], " "), "(floor)") {
		t.Errorf("the RR table does not mark localhost alone as the floor:\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(line); n > 100 {
			t.Errorf("a line of %d columns, more than 100: %q", n, line)
		}
	}
	if strings.Contains(out, "TRIM20") {
		t.Errorf("brief output has the full table:\n%s", out)
	}
	if n := strings.Count(out, "\n"); n > 40 {
		t.Errorf("brief output has %d lines, more than a screen:\n%s", n, out)
	}
}

// A verdict whose comparisons could not reach significance at their samples says how many
// samples a side could: 4 for one comparison (3 v 3 gives at best p = 0.1, 4 v 4 0.029), 5
// for three targets ranked after the fact (three pairs: 3 x 0.029 is not below 0.05).
func TestVerdictSaysWhatMoreRoundsBuy(t *testing.T) {
	two := []analysis.VerdictLine{{Entries: []analysis.Ranked{{Target: "a", Verdict: "reference"}, {Target: "b", Verdict: analysis.Untestable}}}}
	if note := untestableNote(two); !strings.Contains(note, "4 samples a side") {
		t.Errorf("two targets: %q", note)
	}
	three := []analysis.VerdictLine{{Entries: []analysis.Ranked{{Target: "a", Verdict: "best"}, {Target: "b", Verdict: analysis.Untestable}, {Target: "c", Verdict: analysis.Untestable}}}}
	if note := untestableNote(three); !strings.Contains(note, "5 samples a side") {
		t.Errorf("three targets: %q", note)
	}
	if note := untestableNote([]analysis.VerdictLine{{Entries: []analysis.Ranked{{Verdict: "best"}, {Verdict: analysis.NotSignificant}}}}); note != "" {
		t.Errorf("nothing untestable, yet: %q", note)
	}
}

// TestVerdictPairsByRound: rounds that swing by ±20 % hide a steady 5 % drop from an unpaired
// comparison; compared round by round the drop is clear, and the line says the comparison was
// paired. A round one target missed (its sample failed) leaves the comparison unpaired.
func TestVerdictPairsByRound(t *testing.T) {
	swing := []float64{1.0, 0.8, 1.2, 0.9, 1.1}
	var samples []record.Sample
	for i, f := range swing {
		for _, tg := range []struct {
			name  string
			speed float64
		}{{"a", 10 * (1 + 0.003*float64(i%2))}, {"b", 9.5 * (1 - 0.003*float64(i%3))}} {
			samples = append(samples, record.Sample{RunID: "r", Round: i + 1, Target: tg.name, Path: "cross-node", Workload: "tcp-stream/1",
				Metrics: map[string]float64{"throughput_gbps": tg.speed * f}})
		}
	}
	l := analysis.Verdict(samples)[0]
	if b := l.Entries[1]; b.Target != "b" || b.Verdict != "worse" || !b.Paired {
		t.Errorf("entry %+v; want b worse, paired", b)
	}
	var buf bytes.Buffer
	WriteVerdict(&buf, []analysis.VerdictLine{l})
	if !strings.Contains(buf.String(), "worse (p=") || !strings.Contains(buf.String(), ", paired)") {
		t.Errorf("verdict text:\n%s", buf.String())
	}
	// JSON says so too.
	data, err := json.Marshal(jsonSafe(NewDocument(record.Run{ID: "r"}, nil, samples)))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Verdict []struct{ Entries []struct{ Paired bool } }
	}
	if err := json.Unmarshal(data, &doc); err != nil || len(doc.Verdict) != 1 || !doc.Verdict[0].Entries[1].Paired {
		t.Errorf("JSON verdict %s: want the second entry paired (%v)", data, err)
	}
	// A round one target missed (its sample failed) is left out, and the line says so; the
	// other four rounds still show the drop, which all nine samples unpaired could not.
	samples[len(samples)-1].Error, samples[len(samples)-1].Metrics = "boom", nil
	l = analysis.Verdict(samples)[0]
	if b := l.Entries[1]; !b.Paired || b.Dropped != 1 || b.NA != 4 || b.Verdict != "worse" {
		t.Errorf("with a round missing on one side: %+v; want worse, paired on the 4 complete rounds, 1 left out", b)
	}
	buf.Reset()
	WriteVerdict(&buf, []analysis.VerdictLine{l})
	if !strings.Contains(buf.String(), ", paired, 1 round left out)") {
		t.Errorf("verdict text does not say a round was left out:\n%s", buf.String())
	}
	buf.Reset()
	WriteRanking(&buf, analysis.Rank(samples))
	if !strings.Contains(buf.String(), "worse (p=") || !strings.Contains(buf.String(), "n=4v4, paired, 1 round left out)") {
		t.Errorf("ranking text does not give n and the round left out:\n%s", buf.String())
	}
}

// TestVerdictPrintsEquivalenceMargin: a run with a precision target prints its equivalence
// margin where an entry is shown within it, for a ratio in per cent and for loss in points at
// the loss level (±0.02 pp near 0.2 % loss at the default 2 %, not the ±2 pp that read every
// small loss as equivalent); a run without one prints no margin.
func TestVerdictPrintsEquivalenceMargin(t *testing.T) {
	var samples []record.Sample
	for i := range 16 {
		swing := 1 + 0.05*float64(i%4-2)
		for _, tg := range []struct {
			name      string
			gbps, pct float64
		}{{"a", 10, 0.2}, {"b", 10 * (1 + 0.002*float64(i%3-1)), 0.2 + 0.001*float64(i%3-1)}} {
			samples = append(samples,
				record.Sample{RunID: "r", Round: i + 1, Target: tg.name, Path: "cross-node", Workload: "tcp-stream/1",
					Metrics: map[string]float64{"throughput_gbps": tg.gbps * swing}},
				record.Sample{RunID: "r", Round: i + 1, Target: tg.name, Path: "cross-node", Workload: "udp-stream/1300B@500M",
					Metrics: map[string]float64{"loss_pct": tg.pct * swing, "throughput_gbps": 0.5}})
		}
	}
	var buf bytes.Buffer
	if err := Brief(&buf, NewDocument(record.Run{ID: "r", Suite: "precision: 5%\n"}, nil, samples)); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"n.s., within ±2 % (p=", "n.s., within ±0.02 pp (p=", "margin, ±2 % of the ratio", "±0.02 pp up to 0.5 % loss"} {
		if !strings.Contains(out, want) {
			t.Errorf("precision run's verdict lacks %q:\n%s", want, out)
		}
	}
	buf.Reset()
	if err := Brief(&buf, NewDocument(record.Run{ID: "r"}, nil, samples)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "within") {
		t.Errorf("a run without a precision target prints a margin:\n%s", buf.String())
	}
}

// TestPercentFormatting: a detectable difference of 150 % reads "150 %", not "1.5e+02 %", and a
// loss's is in points, not points times 100.
func TestPercentFormatting(t *testing.T) {
	for _, c := range []struct {
		e    analysis.Ranked
		want string
	}{
		{analysis.Ranked{MDE: 1.5}, ", could detect 150 %"},
		{analysis.Ranked{MDE: 0.034}, ", could detect 3.4 %"},
		{analysis.Ranked{MDE: 0.3, Points: true}, ", could detect 0.3 pp"},
		{analysis.Ranked{MDE: 0.00012, Points: true}, ", could detect 0.00012 pp"},
	} {
		if got := detectable(c.e); got != c.want {
			t.Errorf("MDE %v (points %v): %q, want %q", c.e.MDE, c.e.Points, got, c.want)
		}
	}
}
