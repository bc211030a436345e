package split

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/testsupport/fuzzcheck"
)

// FuzzSummarize reads k6's CSV output of a split test: an error names the line (or says the
// file is empty), and an accepted file gives a summary that travels as JSON to the runner.
func FuzzSummarize(f *testing.F) {
	b, err := os.ReadFile(filepath.Join("testdata", "k6_split_2vu_12s.csv"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte("metric_name,timestamp,metric_value,status,extra_tags\ncnb_backend,1795469206730,1,,backend=backend-a\ncnb_backend,99999999999999,1,,backend=backend-b\n"))
	f.Add([]byte("metric_name,timestamp,metric_value,extra_tags\nhttp_req_duration,1795469206729,NaN,\ncnb_backend,1795469206730,1e400,backend=x\n"))
	f.Add([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff})
	f.Fuzz(func(t *testing.T, csv []byte) {
		var s Summary
		var err error
		o := SummaryOptions{First: "backend-a", Weight: 40, Window: time.Second}
		fuzzcheck.Within(t, "Summarize", func() { s, err = Summarize(bytes.NewReader(csv), o) })
		if err != nil {
			fuzzcheck.Names(t, err, "k6 csv line ", "k6 csv: empty file", "k6 csv: gzip", "k6 csv: no cnb_backend rows", "record on line ", "parse error on line ", "split summary")
			return
		}
		if _, err := json.Marshal(s); err != nil {
			t.Fatalf("the summary does not travel as JSON: %v", err)
		}
	})
}
