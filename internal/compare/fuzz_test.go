package compare

import (
	"math"
	"testing"

	"github.com/cnibench/cnibench/internal/testsupport/fuzzcheck"
)

// FuzzParseTolerance reads --tolerance: an error quotes the value, and an accepted tolerance
// is a number from 0 to below 1 that the gate validates.
func FuzzParseTolerance(f *testing.F) {
	for _, s := range []string{"5%", "0.05", " 10 % ", "100%", "-1%", "NaN", "inf%", "1e-400"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var v float64
		var err error
		fuzzcheck.Within(t, "ParseTolerance", func() { v, err = ParseTolerance(s) })
		if err != nil {
			fuzzcheck.Names(t, err, "expected a percentage")
			return
		}
		if math.IsNaN(v) || v < 0 || v >= 1 {
			t.Fatalf("ParseTolerance(%q) = %v, want 0 <= v < 1", s, v)
		}
	})
}
