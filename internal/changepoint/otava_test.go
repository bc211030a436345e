package changepoint

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// otavaPanel is testdata/panel.json, written by testdata/otava_crosscheck.py
// from Apache Otava 0.8.0's own output.
type otavaPanel struct {
	OtavaVersion string        `json:"otava_version"`
	Alpha        float64       `json:"alpha"`
	GoMinSize    int           `json:"go_min_size"`
	WindowLen    int           `json:"window_len"`
	Series       []otavaSeries `json:"series"`
}

// otavaSeries is one series of the panel with what Otava made of it.
type otavaSeries struct {
	Name            string    `json:"name"`
	Values          []float64 `json:"values"`
	MaxPValue       float64   `json:"max_pvalue"`
	Otava           []int     `json:"otava"`
	CandidateIndex  int       `json:"candidate_index"`
	CandidateQhat   float64   `json:"candidate_qhat"`
	CandidateTTestP float64   `json:"candidate_ttest_p"`
}

func loadPanel(t *testing.T) otavaPanel {
	t.Helper()
	path := filepath.Join("testdata", "panel.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	var p otavaPanel
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	if len(p.Series) < 100 {
		t.Fatalf("%s holds %d series, want at least 100", path, len(p.Series))
	}
	if p.Alpha != DefaultAlpha || p.GoMinSize != DefaultMinSize || p.WindowLen != windowLen {
		t.Fatalf("%s was made for alpha %v, min size %d, window %d; the Go defaults are %v, %d, %d",
			path, p.Alpha, p.GoMinSize, p.WindowLen, DefaultAlpha, DefaultMinSize, windowLen)
	}
	return p
}

func relClose(a, b, tol float64) bool {
	return math.Abs(a-b) <= tol*math.Max(math.Abs(a), math.Abs(b)) || math.Abs(a-b) < 1e-300
}

// TestOtavaInternals checks the building blocks on every panel series: the
// E-Divisive candidate over the whole series and Otava's t-test p-value.
func TestOtavaInternals(t *testing.T) {
	p := loadPanel(t)
	for _, s := range p.Series {
		n := len(s.Values)
		level, err := SplitLevel(n, Options{})
		if err != nil || !relClose(level, s.MaxPValue, 1e-12) {
			t.Errorf("%s: SplitLevel = %v (%v), the script used %v", s.Name, level, err, s.MaxPValue)
		}
		c, ok := newEnergy(s.Values).best(segment{0, n}, 1)
		if !ok || c.index != s.CandidateIndex || !relClose(c.q, s.CandidateQhat, 1e-9) {
			t.Errorf("%s: candidate (%d, %v), Otava (%d, %v)", s.Name, c.index, c.q, s.CandidateIndex, s.CandidateQhat)
			continue
		}
		st := studentT(s.Values[:c.index], s.Values[c.index:], true)
		if !relClose(st.p, s.CandidateTTestP, 1e-7) {
			t.Errorf("%s: t-test p = %v, Otava %v", s.Name, st.p, s.CandidateTTestP)
		}
	}
}

// within1 reports whether got and want have the same number of change
// points, each within one run of its counterpart.
func within1(got, want []int) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] < want[i]-1 || got[i] > want[i]+1 {
			return false
		}
	}
	return true
}

func indices(cs []Change) []int {
	out := make([]int, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.Index)
	}
	return out
}

// TestOtavaCrossCheck compares the change points with Otava's, twice: with
// Otava's own behaviour switched back on (MinSize 1, population variance,
// Otava's re-test), which must agree on every series, and with the Detect
// defaults, whose deliberate differences are measured and bounded.
func TestOtavaCrossCheck(t *testing.T) {
	p := loadPanel(t)
	var same, near, compat int
	for _, s := range p.Series {
		cfg := config{minSize: 1, level: s.MaxPValue, otavaTTest: true, otavaRetest: true}
		if got := indices(detect(s.Values, cfg)); slices.Equal(got, s.Otava) {
			compat++
		} else {
			t.Errorf("%s: Otava mode found %v, Otava %v", s.Name, got, s.Otava)
		}
		cs, err := Detect(s.Values, Options{})
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		got := indices(cs)
		if slices.Equal(got, s.Otava) {
			same++
		} else {
			t.Logf("differs: %s: Detect %v, Otava %v", s.Name, got, s.Otava)
		}
		if within1(got, s.Otava) {
			near++
		}
	}
	n := float64(len(p.Series))
	t.Logf("Otava %s panel of %d series: Otava mode identical %.1f%%; Detect defaults identical %.1f%%, within ±1 %.1f%%",
		p.OtavaVersion, len(p.Series), 100*float64(compat)/n, 100*float64(same)/n, 100*float64(near)/n)
	if float64(same)/n < 0.90 {
		t.Errorf("Detect defaults agree with Otava on %.1f%% of series, want >= 90%%", 100*float64(same)/n)
	}
}

// TestOtavaDeviations logs how much each deliberate difference from Otava
// moves the result on the panel, one at a time, for the record.
func TestOtavaDeviations(t *testing.T) {
	p := loadPanel(t)
	otava := config{minSize: 1, otavaTTest: true, otavaRetest: true}
	for _, d := range []struct {
		name string
		edit func(*config)
	}{
		{"MinSize 3", func(c *config) { c.minSize = DefaultMinSize }},
		{"sample variance", func(c *config) { c.otavaTTest = false }},
		{"re-test both neighbours", func(c *config) { c.otavaRetest = false }},
	} {
		cfg := otava
		d.edit(&cfg)
		same := 0
		for _, s := range p.Series {
			cfg.level = s.MaxPValue
			if slices.Equal(indices(detect(s.Values, cfg)), s.Otava) {
				same++
			}
		}
		t.Logf("Otava mode but %s: identical on %d of %d series", d.name, same, len(p.Series))
	}
}

// TestMergeRetestsLeftNeighbour pins the re-test fix on a panel series
// where it matters: a 20 % drop at run 3 and a weak point at 7. Removing 7
// leaves the point at 3 with the p-value of its old [3, 7) segment under
// Otava's re-test, which then drops a real step; re-testing it on [3, 20)
// keeps it.
func TestMergeRetestsLeftNeighbour(t *testing.T) {
	p := loadPanel(t)
	i := slices.IndexFunc(p.Series, func(s otavaSeries) bool { return s.Name == "step x0.80 at 3 n=20" })
	if i < 0 {
		t.Fatal("panel series \"step x0.80 at 3 n=20\" is missing")
	}
	s := p.Series[i]
	cfg := config{minSize: 1, level: s.MaxPValue, otavaTTest: true, otavaRetest: true}
	if got := merge(s.Values, []int{3, 7}, cfg); len(got) != 0 {
		t.Errorf("Otava's re-test kept %v, want nothing (as Otava)", got)
	}
	cfg.otavaRetest = false
	if got := merge(s.Values, []int{3, 7}, cfg); !slices.Equal(got, []int{3}) {
		t.Errorf("re-testing both neighbours kept %v, want [3]", got)
	}
}
