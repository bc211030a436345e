package stats

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// blocked draws n blocks of both sides: each block's factor (lognormal with blockCV) moves
// both sides alike, as a round of an interleaved run does; within a block each value has the
// noise nz around its side's mean.
func blocked(r *rand.Rand, nz noise, blockCV float64, n int, meanA, meanB float64) (a, b []Obs) {
	block := lognormal(blockCV)
	for i := range n {
		f := 1.0
		if blockCV > 0 {
			f = block.draw(r, 1)
		}
		name := "r" + strconv.Itoa(i)
		a = append(a, Obs{Block: name, Value: nz.draw(r, meanA*f)})
		b = append(b, Obs{Block: name, Value: nz.draw(r, meanB*f)})
	}
	return a, b
}

// TestPairedCalibration is the calibration panel of the blocked comparison: for block effects
// from none to a 20 % swing between rounds, the paired 95 % interval must cover the true ratio
// of means in [0.93, 0.975] (lognormal noise; bimodal noise may over-cover), its verdicts
// under no difference must stay at the 5 % level (an exact test's rate is 0.05: 2000
// repetitions put it within ±0.01), and where the rounds swing at least twice as much as the
// noise the paired interval must be the narrower nine times in ten. The measured coverage,
// false-verdict rate and share of narrower intervals are logged (go test -v -run
// PairedCalibration).
func TestPairedCalibration(t *testing.T) {
	const reps, trueRatio = 2000, 1.1
	r := rand.New(rand.NewPCG(17, 19))
	for _, nz := range []noise{lognormal(0.02), lognormal(0.10), bimodalNoise()} {
		for _, blockCV := range []float64{0, 0.10, 0.20} {
			for _, n := range []int{3, 5, 10} {
				covered, falseVerdicts, narrower := 0, 0, 0
				for range reps {
					a, b := blocked(r, nz, blockCV, n, 100, 100*trueRatio)
					c := mustBlocked(t, a, b, PairAuto)
					if !c.Paired {
						t.Fatalf("%d complete blocks compared unpaired", n)
					}
					if c.RatioLow <= trueRatio && trueRatio <= c.RatioHigh {
						covered++
					}
					u := mustBlocked(t, a, b, PairOff)
					if c.RatioHigh/c.RatioLow < u.RatioHigh/u.RatioLow {
						narrower++
					}
					a, b = blocked(r, nz, blockCV, n, 100, 100)
					if v := mustBlocked(t, a, b, PairAuto).Verdict; v == VerdictBetter || v == VerdictWorse {
						falseVerdicts++
					}
				}
				cov, fv, nr := float64(covered)/reps, float64(falseVerdicts)/reps, float64(narrower)/reps
				t.Logf("%-22s blocks CV %-5s n=%2d: coverage %.3f, false verdicts %.3f, narrower than unpaired %.2f of the time",
					nz.name, pct(blockCV), n, cov, fv, nr)
				if cov < 0.93 || cov > 0.975 && !nz.skewed {
					t.Errorf("%s, blocks CV %s, n=%d: the paired 95 %% interval covers %.3f, want [0.93, 0.975]", nz.name, pct(blockCV), n, cov)
				}
				if fv > 0.06 {
					t.Errorf("%s, blocks CV %s, n=%d: %.3f false verdicts under no difference, want at most 0.05", nz.name, pct(blockCV), n, fv)
				}
				if !nz.skewed && blockCV >= 2*nz.cv && n >= 5 && nr < 0.9 {
					t.Errorf("%s, blocks CV %s, n=%d: paired narrower only %.2f of the time", nz.name, pct(blockCV), n, nr)
				}
			}
		}
	}
}

func mustBlocked(t *testing.T, a, b []Obs, p Pairing) Comparison {
	t.Helper()
	c, err := CompareBlocked(a, b, true, p, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestPairedDetectsWhatBlocksHide: a steady 5 % drop under rounds that swing by ±20 % is
// invisible to the unpaired analysis and clear to the paired one.
func TestPairedDetectsWhatBlocksHide(t *testing.T) {
	factors := []float64{1.0, 0.8, 1.2, 0.9, 1.1}
	var a, b []Obs
	for i, f := range factors {
		name := "run/" + strconv.Itoa(i+1)
		a = append(a, Obs{name, 100 * f * (1 + 0.004*float64(i%2))})
		b = append(b, Obs{name, 95 * f * (1 - 0.004*float64(i%3))})
	}
	p := mustBlocked(t, a, b, PairAuto)
	u := mustBlocked(t, a, b, PairOff)
	if !p.Paired || p.Verdict != VerdictWorse || p.RatioHigh >= 1 || p.RatioLow < 0.9 {
		t.Errorf("paired: %+v; want worse with an interval inside [0.9, 1)", p)
	}
	if u.Paired || u.Verdict != VerdictNone {
		t.Errorf("unpaired: %+v; want no significant difference", u)
	}
	if math.Abs(p.Ratio-u.Ratio) > 0.005 {
		t.Errorf("paired ratio %v, unpaired %v: with the same noise on both sides both estimate the ratio of means", p.Ratio, u.Ratio)
	}
}

// TestPairingNeedsCompleteBlocks: a block missing on one side, a block measured twice, or
// fewer than MinPairedBlocks blocks fall back to the unpaired analysis.
func TestPairingNeedsCompleteBlocks(t *testing.T) {
	obs := func(blocks ...string) []Obs {
		var out []Obs
		for i, b := range blocks {
			out = append(out, Obs{b, 100 + float64(i)})
		}
		return out
	}
	for _, c := range []struct {
		name   string
		a, b   []Obs
		paired bool
	}{
		{"complete", obs("1", "2", "3"), obs("3", "1", "2"), true},
		{"two blocks", obs("1", "2"), obs("1", "2"), false},
		{"a block on one side only", obs("1", "2", "3", "4"), obs("1", "2", "3"), false},
		{"different blocks", obs("1", "2", "3"), obs("1", "2", "4"), false},
		{"a block twice", obs("1", "2", "2", "3"), obs("1", "2", "3", "4"), false},
	} {
		got := mustBlocked(t, c.a, c.b, PairAuto)
		if got.Paired != c.paired {
			t.Errorf("%s: paired %v, want %v", c.name, got.Paired, c.paired)
		}
	}
}

// TestPairedMatchesHandComputation pins the paired estimate, interval and p to the formula
// evaluated with SciPy 1.17: l = log(b/a), se = std(l, ddof=1)/sqrt(n),
// exp(mean(l) ± t.ppf(0.975, n-1)·se), p = scipy.stats.ttest_1samp(l, 0).pvalue.
func TestPairedMatchesHandComputation(t *testing.T) {
	a := []Obs{{"1", 10}, {"2", 12}, {"3", 11}, {"4", 13}}
	b := []Obs{{"1", 11}, {"2", 12.5}, {"3", 12.4}, {"4", 14}}
	c := mustBlocked(t, a, b, PairAuto)
	for _, v := range []struct {
		name      string
		got, want float64
	}{
		{"ratio", c.Ratio, 1.0860098990013467},
		{"low", c.RatioLow, 1.029665875359795},
		{"high", c.RatioHigh, 1.1454371063009086},
		{"p", c.PValue, 0.016009196603906622},
	} {
		if math.Abs(v.got-v.want) > 1e-9*v.want {
			t.Errorf("%s = %.16g, want %.16g", v.name, v.got, v.want)
		}
	}
	if c.Verdict != VerdictBetter {
		t.Errorf("verdict %q, want better", c.Verdict)
	}
}
