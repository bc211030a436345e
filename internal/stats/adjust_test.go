package stats

import (
	"math"
	"strings"
	"testing"
)

// adjustInput has ties, an unsorted order, a p of 1 and a test not made (NaN).
var adjustInput = []float64{0.01, 0.04, 0.03, math.NaN(), 0.005, 0.2, 0.04, 1.0}

// BH reference from SciPy 1.17.1 over the seven tests made:
//
//	python3 -c "from scipy.stats import false_discovery_control as f; print(list(f([0.01,0.04,0.03,0.005,0.2,0.04,1.0], method='bh')))"
//
// Holm reference by R's definition, pmin(1, cummax((m-k+1) * sorted p)) with m = 7:
// 0.005*7, 0.01*6, 0.03*5, 0.04*4, max(0.04*3, 0.16), 0.2*2, 1*1.
func TestAdjustPValuesMatchesReferences(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		method string
		want   []float64
	}{
		{AdjustBH, []float64{0.035, 0.056, 0.056, nan, 0.035, 0.23333333333333336, 0.056, 1}},
		{AdjustHolm, []float64{0.06, 0.16, 0.15, nan, 0.035, 0.4, 0.16, 1}},
		{AdjustNone, adjustInput},
	} {
		got, err := AdjustPValues(adjustInput, c.method)
		if err != nil {
			t.Fatalf("%s: %v", c.method, err)
		}
		for i := range c.want {
			if math.IsNaN(c.want[i]) != math.IsNaN(got[i]) || math.Abs(got[i]-c.want[i]) > 1e-12 {
				t.Errorf("%s: p[%d] adjusted to %v, want %v (all: %v)", c.method, i, got[i], c.want[i], got)
			}
		}
	}
	if !math.IsNaN(adjustInput[3]) || adjustInput[0] != 0.01 {
		t.Errorf("input modified: %v", adjustInput)
	}
}

// One test is its own family: every method leaves it alone.
func TestAdjustSingleTestUnchanged(t *testing.T) {
	for _, m := range AdjustMethods() {
		got, err := AdjustPValues([]float64{0.03}, m)
		if err != nil || got[0] != 0.03 {
			t.Errorf("%s: %v, %v", m, got, err)
		}
	}
}

func TestAdjustPValuesRejectsBadInput(t *testing.T) {
	if _, err := AdjustPValues([]float64{0.1}, "bonferroni"); err == nil || !strings.Contains(err.Error(), "bh, holm, none") {
		t.Errorf("unknown method: %v", err)
	}
	if _, err := AdjustPValues([]float64{0.1, 1.5}, AdjustBH); err == nil || !strings.Contains(err.Error(), "1.5") {
		t.Errorf("p out of range: %v", err)
	}
}

// TestAdjustedFloor: the floor is the adjusted p at the test's own smallest p, the others as
// they are: SciPy 1.17's scipy.stats.false_discovery_control on the substituted vectors
// ([0.0079, 0.01, 0.02][0] = 0.015, [0.4, 0.0079, 0.02][1] = 0.0237, [0.4, 0.01, 0.0079][2] =
// 0.015), and Holm's (m-k+1)·p with its running maximum (0.0237 for each); a Holm family of
// twelve rank tests at 5 v 5 floors at 12·0.0079365 = 0.0952.
func TestAdjustedFloor(t *testing.T) {
	const m5 = 0.007936507936507936 // 5 v 5
	for _, c := range []struct {
		name    string
		p, minP []float64
		method  string
		want    []float64
	}{
		{"holm", []float64{0.2, 0.3, 0.5}, []float64{0.0079, 0.0079, 0.0079}, AdjustHolm, []float64{0.0237, 0.0237, 0.0237}},
		{"bh helped by the others", []float64{0.4, 0.01, 0.02}, []float64{0.0079, 0.0079, 0.0079}, AdjustBH, []float64{0.015, 0.0237, 0.015}},
		{"no floor", []float64{0.2, math.NaN()}, []float64{0, 0}, AdjustHolm, []float64{0, math.NaN()}},
	} {
		got, err := AdjustedFloor(c.p, c.minP, c.method)
		if err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if !(math.Abs(got[i]-c.want[i]) < 1e-12 || math.IsNaN(got[i]) && math.IsNaN(c.want[i])) {
				t.Errorf("%s: floor %v, want %v", c.name, got, c.want)
				break
			}
		}
	}
	twelve := make([]float64, 12)
	floors := make([]float64, 12)
	for i := range twelve {
		twelve[i], floors[i] = 0.4, m5
	}
	got, _ := AdjustedFloor(twelve, floors, AdjustHolm)
	if math.Abs(got[0]-12*m5) > 1e-12 || got[0] < DefaultAlpha {
		t.Errorf("twelve rank tests at 5 v 5 under Holm: floor %v, want %v (untestable)", got[0], 12*m5)
	}
}
