package profile

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/cnibench/cnibench/internal/testsupport/fuzzcheck"
)

// FuzzFoldPerfScript folds `perf script` output: what it folds is written (String) as folded
// stacks that Parse reads back unchanged, which is how a stored profile is read.
func FuzzFoldPerfScript(f *testing.F) {
	b, err := os.ReadFile(filepath.Join("testdata", "perf-script.txt"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte("#comm 1\n\tffff x ([k])\n\n  7 \n\t1 ;a b (/x)\n"))
	f.Fuzz(func(t *testing.T, script []byte) {
		var folded Folded
		var err error
		fuzzcheck.Within(t, "FoldPerfScript", func() { folded, err = FoldPerfScript(bytes.NewReader(script)) })
		if err != nil {
			fuzzcheck.Names(t, err, "perf script")
			return
		}
		back, err := Parse(folded.String())
		if err != nil || !maps.Equal(back, folded) {
			t.Fatalf("folded %v, written as %q, reads back as %v, %v", folded, folded.String(), back, err)
		}
	})
}

// FuzzParse reads folded stacks (a stored profile, FlameGraph's files): an error names the
// line, and what it read is written back unchanged.
func FuzzParse(f *testing.F) {
	f.Add("iperf3;vxlan_xmit_[k] 12\n# comment\nswapper;do_idle_[k] 3\n")
	f.Add("a 1\na 2\nb x\n")
	f.Fuzz(func(t *testing.T, text string) {
		var folded Folded
		var err error
		fuzzcheck.Within(t, "Parse", func() { folded, err = Parse(text) })
		if err != nil {
			fuzzcheck.Names(t, err, "line ")
			return
		}
		back, err := Parse(folded.String())
		if err != nil || !maps.Equal(back, folded) {
			t.Fatalf("Parse(%q) = %v, written as %q, reads back as %v, %v", text, folded, folded.String(), back, err)
		}
	})
}
