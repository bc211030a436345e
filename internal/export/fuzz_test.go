package export

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/testsupport/fuzzcheck"
)

// FuzzReadJSON reads exported runs (the import side of the JSON export): an error names the
// byte or field it failed at, and a document it reads is written back as one that reads the
// same: importing an export and exporting it again changes nothing.
func FuzzReadJSON(f *testing.F) {
	started := time.Date(2026, 11, 21, 10, 0, 0, 123456789, time.UTC)
	b := Bundle{
		Run: record.Run{ID: "r1", Started: started, Finished: started.Add(time.Minute), Status: "done", Seed: 7,
			Version: "v1", Note: "n", Suite: "paths: [cross-node]\n", Labels: map[string]string{"branch": "main"}},
		Targets: []record.Target{{RunID: "r1", Name: "local", Fingerprint: map[string]string{"kernel": "6.1", "node_a_mtu": "1500"}}},
		Samples: []record.Sample{
			{RunID: "r1", Seq: 1, Round: 0, Warmup: true, Target: "local", Path: "cross-node", Workload: "tcp-stream/1", Pairs: 1,
				Started: started, Duration: 4 * time.Second, Metrics: map[string]float64{"throughput_gbps": 9.5}, Raw: "{}"},
			{RunID: "r1", Seq: 2, Round: 1, Target: "local", Path: "cross-node", Workload: "tcp-rr/1B", Pairs: 10, Flags: []string{"skew"},
				Started: started, Duration: 4 * time.Second, Resources: map[string]float64{"node_cpu_pct": 12}, Error: "iperf3 reported an error: x"},
		},
	}
	var doc bytes.Buffer
	if err := WriteJSON(&doc, b); err != nil {
		f.Fatal(err)
	}
	f.Add(doc.Bytes())
	f.Add([]byte(strings.Replace(doc.String(), JSONFormat, jsonFormatV1, 1)))
	f.Add([]byte(`{"format":"cnibench-run/v2","run":{"labels":{}},"targets":[{"fingerprint":{}}],"samples":[{"flags":[],"metrics":{"x":-0}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var first Bundle
		var err error
		fuzzcheck.Within(t, "ReadJSON", func() { first, err = ReadJSON(bytes.NewReader(data)) })
		if err != nil {
			fuzzcheck.Names(t, err, "read json export")
			fuzzcheck.NamesJSONPlace(t, err)
			return
		}
		var once, twice bytes.Buffer
		if err := WriteJSON(&once, first); err != nil {
			t.Fatalf("WriteJSON of a read export: %v", err)
		}
		again, err := ReadJSON(bytes.NewReader(once.Bytes()))
		if err != nil {
			t.Fatalf("the export written back does not read: %v\n%s", err, once.String())
		}
		if err := WriteJSON(&twice, again); err != nil {
			t.Fatal(err)
		}
		if once.String() != twice.String() {
			t.Fatalf("export changed on a round trip:\n%s\n---\n%s", once.String(), twice.String())
		}
	})
}
