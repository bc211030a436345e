package compare

import (
	"math"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/stats"
)

// TestVerdictTextUnits: a loss row's detectable difference is in points (0.3 pp, not "30 %"),
// a ratio's in per cent without an exponent (150 %, not 1.5e+02 %).
func TestVerdictTextUnits(t *testing.T) {
	for _, c := range []struct {
		r    Row
		want string
	}{
		{Row{Verdict: stats.VerdictNone, MDE: 0.3, Points: true}, "no significant difference (could detect >= 0.3 pp)"},
		{Row{Verdict: stats.VerdictNone, MDE: 1.5}, "no significant difference (could detect >= 150 %)"},
		{Row{Verdict: stats.VerdictNone, MDE: 0.0412}, "no significant difference (could detect >= 4.1 %)"},
		{Row{Verdict: stats.VerdictNone, MDE: math.Inf(1)}, "no significant difference"},
		{Row{Verdict: stats.VerdictUntestable, NA: 3, NB: 3}, "untestable at 3v3"},
	} {
		if got := verdictText(c.r); got != c.want {
			t.Errorf("%+v: %q, want %q", c.r, got, c.want)
		}
	}
}

// TestPairedRowSaysWhatItLeftOut: a paired row whose sides measured rounds the other missed
// compares the complete rounds and says how many values it left out, in the table and JSON.
func TestPairedRowSaysWhatItLeftOut(t *testing.T) {
	var a, b []stats.Obs
	for i, f := range []float64{1, 0.8, 1.2, 0.9, 1.1, 1} {
		block := string(rune('a' + i))
		a = append(a, stats.Obs{Block: block, Value: 10 * f * (1 + 0.003*float64(i%2))})
		if i != 2 { // B's third round failed
			b = append(b, stats.Obs{Block: block, Value: 9.5 * f * (1 - 0.003*float64(i%3))})
		}
	}
	r := compareRow(key{Cell{"cross-node", "tcp-stream/1", 1}, "throughput_gbps"}, a, b, 0, 1, stats.PairAuto, stats.CompareOptions{})
	if !r.Paired || r.Verdict != stats.VerdictWorse || leftOut(r) != 1 {
		t.Fatalf("row %+v: want worse, paired, 1 value left out", r)
	}
	if got := rowP(r); !strings.HasSuffix(got, " paired, 1 left out") {
		t.Errorf("p column %q", got)
	}
	var buf strings.Builder
	if err := Write(&buf, FormatJSON, Result{Rows: []Row{r}, Alpha: 0.05, Adjust: stats.AdjustNone}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"left_out": 1`) {
		t.Errorf("JSON lacks left_out:\n%s", buf.String())
	}
}
