package export

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/analysis"
	"github.com/cnibench/cnibench/internal/catalog"
	"github.com/cnibench/cnibench/internal/record"
)

// MetricPrefix starts the name of every OpenMetrics family WriteOpenMetrics writes.
const MetricPrefix = "cnibench_"

// summaryStats are the per-cell summary families written after each metric's raw family, as
// suffixes of its name. "_count" and "_sum" are avoided: OpenMetrics reserves them for
// summaries and histograms.
func summaryStats() []string {
	return []string{"mean", "median", "ci95_low", "ci95_high", "n"}
}

// baseUnits maps a metric name's last word to the OpenMetrics base unit it already is in.
// Only names that end in a base unit get a # UNIT line: OpenMetrics requires the unit to be
// the family name's suffix, and the other metrics (Gbit/s, µs, %, MiB, ...) keep the names
// and values they have everywhere else in cnibench rather than being renamed and rescaled
// for this one format; their HELP text names their unit instead.
func baseUnits() map[string]string {
	return map[string]string{"seconds": "seconds", "bytes": "bytes", "ratio": "ratio"}
}

// WriteOpenMetrics writes the run in the OpenMetrics 1.0 text format, for
// `promtool tsdb create-blocks-from openmetrics` and other OpenMetrics readers:
//
//   - cnibench_run (info): one point with the run's id, status, version and seed.
//   - cnibench_target (info): one point per target, its fingerprint as labels.
//   - cnibench_<metric> (gauge): one point per measured, successful sample, labelled run,
//     target, path, workload, round and seq, timestamped with the sample's start. Warm-up
//     and failed samples are left out: they are not results, and a dashboard that
//     aggregates the family must not have to know to exclude them (the CSV and JSON exports
//     keep them).
//   - cnibench_<metric>_{mean,median,ci95_low,ci95_high,n} (gauge): the summary `cnibench
//     results show` prints, per target, path and workload, timestamped with the cell's last
//     sample. The interval bounds are absent where fewer than 2 samples leave them undefined.
//
// Every point carries a timestamp, because backfilling needs one and a run describes the
// past rather than the moment of the export.
func WriteOpenMetrics(w io.Writer, b Bundle) error {
	// Checked before anything is written, so that a refused run writes nothing at all.
	families, err := gaugeFamilies(b.Samples)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	om := omWriter{w: bw}
	om.header(MetricPrefix+"run", "info", "", "A cnibench run: one invocation of the benchmark.")
	om.point(MetricPrefix+"run_info", []label{{"run", b.Run.ID}, {"status", b.Run.Status}, {"version", b.Run.Version},
		{"seed", strconv.FormatInt(b.Run.Seed, 10)}}, 1, b.Run.Started)
	if len(b.Targets) > 0 {
		om.header(MetricPrefix+"target", "info", "", "A target (cluster) measured by a run, with its environment fingerprint.")
		for _, t := range b.Targets {
			om.point(MetricPrefix+"target_info", targetLabels(b.Run.ID, t), 1, b.Run.Started)
		}
	}

	summaries := summariesByMetric(b.Samples)
	for _, f := range families {
		spec, known := catalog.Lookup(f.metric)
		om.header(f.name, "gauge", f.unit, helpText(f.metric, spec, known, ""))
		for _, s := range f.samples {
			om.point(f.name, []label{{"run", b.Run.ID}, {"target", s.Target}, {"path", s.Path}, {"workload", s.Workload}, {"pairs", strconv.Itoa(s.Cell().Pairs)},
				{"round", strconv.Itoa(s.Round)}, {"seq", strconv.Itoa(s.Seq)}}, f.value(s), s.Started)
		}
		for i, name := range summaryNames(f.name) {
			stat := summaryStats()[i]
			om.header(name, "gauge", "", helpText(f.metric, spec, known, stat))
			for _, c := range summaries[f.metric] {
				v := c.stat(stat)
				if math.IsNaN(v) || math.IsInf(v, 0) {
					continue
				}
				om.point(name, []label{{"run", b.Run.ID}, {"target", c.row.Target}, {"path", c.row.Path},
					{"workload", c.row.Workload}, {"pairs", strconv.Itoa(c.row.Cell().Pairs)}}, v, c.last)
			}
		}
	}
	om.line("# EOF")
	if om.err == nil {
		om.err = bw.Flush()
	}
	if om.err != nil {
		return fmt.Errorf("write openmetrics: %w", om.err)
	}
	return nil
}

// family is one metric's raw gauge family.
type family struct {
	metric  string // the stored name
	name    string // the OpenMetrics family name
	unit    string // base unit for # UNIT, or empty
	samples []record.Sample
}

// value returns the family's value in a sample that has it.
func (f family) value(s record.Sample) float64 {
	if v, ok := s.Metrics[f.metric]; ok {
		return v
	}
	return s.Resources[f.metric]
}

// gaugeFamilies groups the measured, successful samples by value name, sorted by family
// name. Two stored names that map to one family name, or a name stored both as a metric
// and as a resource of one sample, would make two points of one series, which OpenMetrics
// forbids; they are reported rather than silently dropped.
func gaugeFamilies(samples []record.Sample) ([]family, error) {
	byName := map[string]*family{}
	for _, s := range samples {
		if !sampleOK(s) {
			continue
		}
		for metric := range s.Metrics {
			if _, dup := s.Resources[metric]; dup {
				return nil, fmt.Errorf("write openmetrics: sample %d has %q both as a metric and as a resource", s.Seq, metric)
			}
		}
		for _, m := range []map[string]float64{s.Metrics, s.Resources} {
			for metric := range m {
				name := MetricPrefix + sanitizeName(metric)
				f := byName[name]
				if f == nil {
					f = &family{metric: metric, name: name, unit: unitOf(name)}
					byName[name] = f
				} else if f.metric != metric {
					return nil, fmt.Errorf("write openmetrics: metrics %q and %q both map to the name %s", f.metric, metric, name)
				}
				f.samples = append(f.samples, s)
			}
		}
	}
	out := make([]family, 0, len(byName))
	for _, f := range byName {
		out = append(out, *f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	// A stored name such as "run" or "x_mean" would produce a family name that another
	// family already uses, which readers reject as a whole.
	taken := map[string]string{}
	for _, name := range []string{"run", "run_info", "target", "target_info"} {
		taken[MetricPrefix+name] = "cnibench's own info families"
	}
	for _, f := range out {
		for _, name := range append([]string{f.name}, summaryNames(f.name)...) {
			if other, dup := taken[name]; dup {
				return nil, fmt.Errorf("write openmetrics: metric %q needs the name %s, already used by %s", f.metric, name, other)
			}
			taken[name] = fmt.Sprintf("metric %q", f.metric)
		}
	}
	return out, nil
}

// summaryNames are the names of a raw family's summary families.
func summaryNames(family string) []string {
	var names []string
	for _, stat := range summaryStats() {
		names = append(names, family+"_"+stat)
	}
	return names
}

// unitOf returns the base unit a family name ends in, or "".
func unitOf(name string) string {
	i := strings.LastIndexByte(name, '_')
	return baseUnits()[name[i+1:]]
}

// cellSummary is one summary row with the start time of the cell's last sample.
type cellSummary struct {
	row  analysis.Row
	last time.Time
}

func (c cellSummary) stat(name string) float64 {
	s := c.row.Summary
	switch name {
	case "mean":
		return s.Mean
	case "median":
		return s.Median
	case "ci95_low":
		return s.CILow
	case "ci95_high":
		return s.CIHigh
	case "n":
		return float64(s.N)
	}
	return math.NaN()
}

// summariesByMetric computes the summary rows (as report.Summarize, the same figures
// `results show` prints) grouped by metric, each with its cell's last sample time.
func summariesByMetric(samples []record.Sample) map[string][]cellSummary {
	last := map[record.Cell]time.Time{}
	for _, s := range samples {
		if c := s.Cell(); sampleOK(s) && s.Started.After(last[c]) {
			last[c] = s.Started
		}
	}
	out := map[string][]cellSummary{}
	for _, r := range analysis.Summarize(samples) {
		out[r.Metric] = append(out[r.Metric], cellSummary{row: r, last: last[r.Cell()]})
	}
	return out
}

// helpText describes a family; stat is empty for the raw family.
func helpText(metric string, spec catalog.Spec, known bool, stat string) string {
	desc := "Value " + metric + " stored by cnibench."
	if known {
		desc = strings.TrimSuffix(spec.Description, ".") + " (" + spec.Unit + ")."
	}
	switch stat {
	case "":
		return desc + " One point per measured sample."
	case "n":
		return "Number of measured, successful samples of " + metric + " per target, path and workload."
	case "ci95_low", "ci95_high":
		bound := map[string]string{"ci95_low": "Lower", "ci95_high": "Upper"}[stat]
		return bound + " bound of the 95 % confidence interval of the mean of " + metric + " per target, path and workload. " + desc
	}
	return strings.ToUpper(stat[:1]) + stat[1:] + " of " + metric + " per target, path and workload. " + desc
}

// targetLabels are the labels of a target's info point: run, target, then its fingerprint by
// key. Keys are sanitized into label names; a key that would then clash with an earlier
// label, or start with the reserved "__", is left out (the JSON export has every key).
func targetLabels(runID string, t record.Target) []label {
	labels := []label{{"run", runID}, {"target", t.Name}}
	seen := map[string]bool{"run": true, "target": true}
	keys := make([]string, 0, len(t.Fingerprint))
	for k := range t.Fingerprint {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		name := sanitizeLabel(k)
		if seen[name] || strings.HasPrefix(name, "__") {
			continue
		}
		seen[name] = true
		labels = append(labels, label{name, t.Fingerprint[k]})
	}
	return labels
}

// sanitizeName maps a stored name onto the metric name alphabet [a-zA-Z0-9_]. Colons are
// legal in metric names but reserved for recording rules, so they are replaced too.
func sanitizeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
			return r
		}
		return '_'
	}, s)
}

// sanitizeLabel maps a fingerprint key onto a label name: [a-zA-Z_][a-zA-Z0-9_]*.
func sanitizeLabel(s string) string {
	s = sanitizeName(s)
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		s = "_" + s
	}
	return s
}

// label is one name="value" pair; a slice keeps the order deterministic.
type label struct{ name, value string }

// omWriter writes OpenMetrics lines, keeping the first error.
type omWriter struct {
	w   *bufio.Writer
	err error
}

func (o *omWriter) line(s string) {
	if o.err == nil {
		_, o.err = o.w.WriteString(s + "\n")
	}
}

// header writes a family's metadata: TYPE, UNIT (when not empty), HELP.
func (o *omWriter) header(name, typ, unit, help string) {
	o.line("# TYPE " + name + " " + typ)
	if unit != "" {
		o.line("# UNIT " + name + " " + unit)
	}
	o.line("# HELP " + name + " " + escape(help))
}

// point writes one sample line: name{labels} value timestamp.
func (o *omWriter) point(name string, labels []label, v float64, ts time.Time) {
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('{')
	for i, l := range labels {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(l.name + `="` + escape(l.value) + `"`)
	}
	b.WriteString("} ")
	b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
	b.WriteByte(' ')
	b.WriteString(timestamp(ts))
	o.line(b.String())
}

// escape applies OpenMetrics escaping to a label value or HELP text: backslash, double
// quote and line feed are the only characters escaped.
func escape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// timestamp renders t as OpenMetrics seconds since the epoch, exactly: a float64 of seconds
// has too few digits for nanoseconds at today's epoch offsets, so the decimal is built from
// the integer parts.
func timestamp(t time.Time) string {
	ns := t.UnixNano()
	sign := ""
	if ns < 0 {
		sign, ns = "-", -ns
	}
	sec, frac := ns/1e9, ns%1e9
	if frac == 0 {
		return sign + strconv.FormatInt(sec, 10)
	}
	return sign + strings.TrimRight(fmt.Sprintf("%d.%09d", sec, frac), "0")
}
