package export

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/cnibench/cnibench/internal/record"
)

// JSONFormat identifies the layout WriteJSON writes; ReadJSON refuses any other, so that a
// future incompatible layout is detected rather than misread.
const JSONFormat = "cnibench-run/v2"

// jsonFormatV1 is the layout before samples had pairs and flags; ReadJSON still reads it, as
// samples of one pair without flags.
const jsonFormatV1 = "cnibench-run/v1"

// The JSON layout has its own types, with explicit snake_case keys, rather than encoding the
// store types directly: the file is an interface other tools read, and it must not change
// when a Go field is renamed.

type jsonDoc struct {
	Format  string       `json:"format"`
	Run     RunJSON      `json:"run"`
	Targets []TargetJSON `json:"targets"`
	Samples []jsonSample `json:"samples"`
}

// RunJSON is a run as every JSON output of cnibench writes it (the export, and the summary of
// `run -o json` and `results show -o json`).
type RunJSON struct {
	ID       string     `json:"id"`
	Started  time.Time  `json:"started"`
	Finished *time.Time `json:"finished,omitempty"` // absent while running
	Status   string     `json:"status"`
	Seed     int64      `json:"seed"`
	Version  string     `json:"version"`
	Note     string     `json:"note,omitempty"`
	Suite    string     `json:"suite"` // the effective suite, as YAML text
	// Labels are the run's key=value labels (commit, branch...), absent when none.
	Labels map[string]string `json:"labels,omitempty"`
}

// NewRunJSON is the JSON form of a run, its times in UTC.
func NewRunJSON(r record.Run) RunJSON {
	j := RunJSON{ID: r.ID, Started: r.Started.UTC(), Status: r.Status, Seed: r.Seed, Version: r.Version, Note: r.Note, Suite: r.Suite, Labels: r.Labels}
	if !r.Finished.IsZero() {
		f := r.Finished.UTC()
		j.Finished = &f
	}
	return j
}

// TargetJSON is a run's target as every JSON output of cnibench writes it.
type TargetJSON struct {
	Name        string            `json:"name"`
	Fingerprint map[string]string `json:"fingerprint"`
}

// NewTargetsJSON is the JSON form of a run's targets: an empty fingerprint is an empty object.
func NewTargetsJSON(targets []record.Target) []TargetJSON {
	out := []TargetJSON{}
	for _, t := range targets {
		fp := t.Fingerprint
		if fp == nil {
			fp = map[string]string{}
		}
		out = append(out, TargetJSON{Name: t.Name, Fingerprint: fp})
	}
	return out
}

type jsonSample struct {
	Seq        int                `json:"seq"`
	Round      int                `json:"round"`
	Warmup     bool               `json:"warmup"`
	Target     string             `json:"target"`
	Path       string             `json:"path"`
	Workload   string             `json:"workload"`
	Pairs      int                `json:"pairs,omitempty"`
	Flags      []string           `json:"flags,omitempty"`
	Started    time.Time          `json:"started"`
	DurationNS int64              `json:"duration_ns"`
	Metrics    map[string]float64 `json:"metrics"`
	Resources  map[string]float64 `json:"resources"`
	Error      string             `json:"error,omitempty"`
	// Raw is the tool's output as text: it is iperf3 JSON for some engines and plain text
	// for others, so it is not embedded as JSON.
	Raw string `json:"raw"`
	// Profile is the host's CPU profile during the sample (folded stacks), absent when none.
	Profile string `json:"profile,omitempty"`
}

// WriteJSON writes the run, its targets with their fingerprints, and every sample with its
// raw tool output, as one indented JSON document (see JSONFormat). Metrics and resources
// are always objects, empty rather than null.
func WriteJSON(w io.Writer, b Bundle) error {
	doc := jsonDoc{Format: JSONFormat, Run: NewRunJSON(b.Run), Targets: NewTargetsJSON(b.Targets), Samples: []jsonSample{}}
	for _, s := range b.Samples {
		doc.Samples = append(doc.Samples, jsonSample{Seq: s.Seq, Round: s.Round, Warmup: s.Warmup, Target: s.Target,
			Path: s.Path, Workload: s.Workload, Pairs: s.Cell().Pairs, Flags: s.Flags, Started: s.Started.UTC(), DurationNS: s.Duration.Nanoseconds(),
			Metrics: orEmpty(s.Metrics), Resources: orEmpty(s.Resources), Error: s.Error, Raw: s.Raw, Profile: s.Profile})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("write json: %w", err)
	}
	return nil
}

func orEmpty(m map[string]float64) map[string]float64 {
	if m == nil {
		return map[string]float64{}
	}
	return m
}

// ReadJSON reads a document written by WriteJSON back into a Bundle equal to the one written
// (times in UTC, empty maps as nil, as the store returns them).
func ReadJSON(r io.Reader) (Bundle, error) {
	var doc jsonDoc
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		// The decoder's errors do not say where the document went wrong.
		var syntax *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syntax):
			return Bundle{}, fmt.Errorf("read json export: at byte %d: %w", syntax.Offset, err)
		case errors.As(err, &typ):
			return Bundle{}, fmt.Errorf("read json export: at byte %d: %w", typ.Offset, err)
		}
		return Bundle{}, fmt.Errorf("read json export: %w", err)
	}
	if doc.Format != JSONFormat && doc.Format != jsonFormatV1 {
		return Bundle{}, fmt.Errorf("read json export: format %q, expected %q", doc.Format, JSONFormat)
	}
	b := Bundle{Run: record.Run{ID: doc.Run.ID, Started: doc.Run.Started.UTC(), Status: doc.Run.Status,
		Suite: doc.Run.Suite, Seed: doc.Run.Seed, Version: doc.Run.Version, Note: doc.Run.Note, Labels: doc.Run.Labels}}
	if doc.Run.Finished != nil {
		b.Run.Finished = doc.Run.Finished.UTC()
	}
	for _, t := range doc.Targets {
		fp := t.Fingerprint
		if len(fp) == 0 {
			fp = nil
		}
		b.Targets = append(b.Targets, record.Target{RunID: b.Run.ID, Name: t.Name, Fingerprint: fp})
	}
	for _, s := range doc.Samples {
		b.Samples = append(b.Samples, record.Sample{RunID: b.Run.ID, Seq: s.Seq, Round: s.Round, Warmup: s.Warmup,
			Target: s.Target, Path: s.Path, Workload: s.Workload, Pairs: max(s.Pairs, 1), Flags: s.Flags, Started: s.Started.UTC(),
			Duration: time.Duration(s.DurationNS), Metrics: orNil(s.Metrics), Resources: orNil(s.Resources),
			Raw: s.Raw, Error: s.Error, Profile: s.Profile})
	}
	return b, nil
}

func orNil(m map[string]float64) map[string]float64 {
	if len(m) == 0 {
		return nil
	}
	return m
}
