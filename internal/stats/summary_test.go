package stats

import (
	"math"
	"slices"
	"testing"
)

// approxEq reports whether got is within rel relative (or 1e-300 absolute)
// error of want; NaN matches NaN.
func approxEq(got, want, rel float64) bool {
	if math.IsNaN(want) {
		return math.IsNaN(got)
	}
	if got == want {
		return true
	}
	return math.Abs(got-want) <= rel*math.Abs(want)+1e-300
}

// Reference values produced with SciPy 1.17.1 / NumPy 2.4.6 (Python 3.11.7)
// by this exact command; each line printed
// [n, mean, median, std(ddof=1), min, max, ci_low, ci_high, trim_mean(0.2),
// q25, q75, tukey_outlier_indices, relci]. relci is t·sem/|mean| rather than
// (ci_high-ci_low)/2/mean: for "big4" the subtraction of two ~1e9 endpoints
// loses 8 digits, and Summarize computes the half-width directly.
//
//	python3 -c "import json,numpy as np,scipy.stats as s; f=lambda x:(lambda m,q,ci:[len(x),m,np.median(x),x.std(ddof=1),x.min(),x.max(),*ci,s.trim_mean(x,0.2),*q,np.flatnonzero((x<q[0]-1.5*(q[1]-q[0]))|(x>q[1]+1.5*(q[1]-q[0]))).tolist(),s.t.ppf(0.975,len(x)-1)*s.sem(x)/abs(m)])(x.mean(),np.percentile(x,[25,75]),s.t.interval(0.95,len(x)-1,loc=x.mean(),scale=s.sem(x))); [print(k,json.dumps([float(v) if not isinstance(v,list) else v for v in f(np.array(x))])) for k,x in [['latency10', [12.1, 11.8, 12.4, 35.0, 12.0, 11.9, 12.3, 12.2, 11.7, 12.5]], ['thr5', [9.41, 4.87, 9.12, 9.55, 8.98]], ['two', [1.0, 3.0]], ['tie3', [5.0, 5.0, 7.0]], ['n15', [3.1, 2.7, 3.3, 2.9, 3.0, 3.6, 2.8, 3.2, 9.9, 3.1, 2.95, 3.05, 0.4, 3.15, 2.85]], ['big4', [1000000010.0, 1000000030.0, 999999980.0, 1000000020.0]], ['noisy30', [9.21, 9.43, 8.87, 9.22, 9.4, 4.02, 9.71, 9.67, 9.52, 9.72, 9.73, 9.01, 10.16, 9.38, 9.19, 9.61, 9.23, 9.62, 8.98, 9.65, 8.96, 9.53, 4.48, 9.22, 9.45, 9.2, 9.13, 9.54, 10.08, 4.25]]]]"
func TestSummarizeMatchesSciPy(t *testing.T) {
	summaryCases := []struct {
		name                           string
		xs                             []float64
		n                              int
		mean, median, sd, min, max     float64
		ciLow, ciHigh, trimmed, q1, q3 float64
		outliers                       []int
		relCI                          float64
	}{
		{"latency10", []float64{12.1, 11.8, 12.4, 35.0, 12.0, 11.9, 12.3, 12.2, 11.7, 12.5},
			10, 14.389999999999997, 12.149999999999999, 7.246217404043758, 11.7, 35.0,
			9.206368337852473, 19.57363166214752, 12.15, 11.925, 12.375, []int{3}, 0.3602245769386745},
		{"thr5", []float64{9.41, 4.87, 9.12, 9.55, 8.98},
			5, 8.386000000000001, 9.12, 1.9784665779335269, 4.87, 9.55,
			5.929409278530539, 10.842590721469463, 9.17, 8.98, 9.41, []int{1}, 0.2929395088802124},
		{"two", []float64{1.0, 3.0},
			2, 2.0, 2.0, 1.4142135623730951, 1.0, 3.0,
			-10.706204736174694, 14.706204736174694, 2.0, 1.5, 2.5, []int{}, 6.353102368087347},
		{"tie3", []float64{5.0, 5.0, 7.0},
			3, 5.666666666666667, 5.0, 1.1547005383792517, 5.0, 7.0,
			2.7982315135003586, 8.535101819832976, 5.666666666666667, 5.0, 6.0, []int{}, 0.5061944387940543},
		{"n15", []float64{3.1, 2.7, 3.3, 2.9, 3.0, 3.6, 2.8, 3.2, 9.9, 3.1, 2.95, 3.05, 0.4, 3.15, 2.85},
			15, 3.3333333333333335, 3.05, 1.9530805947333072, 0.4, 9.9,
			2.2517533507814935, 4.414913315885173, 3.033333333333333, 2.875, 3.175, []int{8, 12}, 0.324473994765552},
		{"big4", []float64{1000000010.0, 1000000030.0, 999999980.0, 1000000020.0},
			4, 1000000010.0, 1000000015.0, 21.602468994692867, 999999980.0, 1000000030.0,
			999999975.6256512, 1000000044.3743488, 1000000010.0, 1000000002.5, 1000000022.5, []int{}, 3.4374348474839595e-08},
		{"noisy30", []float64{9.21, 9.43, 8.87, 9.22, 9.4, 4.02, 9.71, 9.67, 9.52, 9.72, 9.73, 9.01, 10.16, 9.38, 9.19, 9.61, 9.23, 9.62, 8.98, 9.65, 8.96, 9.53, 4.48, 9.22, 9.45, 9.2, 9.13, 9.54, 10.08, 4.25},
			30, 8.905666666666665, 9.39, 1.608834839326239, 4.02, 10.16,
			8.304917864632015, 9.506415468701315, 9.363333333333335, 9.145, 9.6175, []int{5, 22, 29}, 0.06745691530126692},
	}
	// Moments and order statistics are simple sums/sorts, so they must
	// agree to a few ulps. The CI also goes through gonum's Student-t
	// quantile (an incomplete-beta inversion), which is accurate to ~1e-12
	// relative rather than to the last bit; 1e-9 leaves margin without
	// hiding a wrong degrees-of-freedom (which would be off by > 1e-3).
	const tight, ci = 1e-12, 1e-9
	for _, c := range summaryCases {
		t.Run(c.name, func(t *testing.T) {
			s := Summarize(c.xs)
			if s.N != c.n {
				t.Errorf("N = %d, want %d", s.N, c.n)
			}
			for _, f := range []struct {
				name      string
				got, want float64
				tol       float64
			}{
				{"Mean", s.Mean, c.mean, tight},
				{"Median", s.Median, c.median, tight},
				{"StdDev", s.StdDev, c.sd, tight},
				{"Min", s.Min, c.min, 0},
				{"Max", s.Max, c.max, 0},
				{"CILow", s.CILow, c.ciLow, ci},
				{"CIHigh", s.CIHigh, c.ciHigh, ci},
				{"TrimmedMean", s.TrimmedMean, c.trimmed, tight},
				{"RelCI", s.RelCI, c.relCI, ci},
			} {
				if !approxEq(f.got, f.want, f.tol) {
					t.Errorf("%s = %.17g, want %.17g", f.name, f.got, f.want)
				}
			}
			sorted := slices.Sorted(slices.Values(c.xs))
			if q1 := quantileSorted(sorted, 0.25); !approxEq(q1, c.q1, tight) {
				t.Errorf("Q1 = %.17g, want %.17g", q1, c.q1)
			}
			if q3 := quantileSorted(sorted, 0.75); !approxEq(q3, c.q3, tight) {
				t.Errorf("Q3 = %.17g, want %.17g", q3, c.q3)
			}
			if !slices.Equal(s.Outliers, c.outliers) {
				t.Errorf("Outliers = %v, want %v", s.Outliers, c.outliers)
			}
		})
	}
}

func TestSummarizeDoesNotModifyInput(t *testing.T) {
	xs := []float64{3, 1, math.NaN(), 2, 10, 0.5}
	orig := slices.Clone(xs)
	Summarize(xs)
	MedianCI(xs, 0.95)
	for i := range xs {
		if xs[i] != orig[i] && !(math.IsNaN(xs[i]) && math.IsNaN(orig[i])) {
			t.Fatalf("input modified: %v, was %v", xs, orig)
		}
	}
}

func TestSummarizeNaNSkipped(t *testing.T) {
	// Same data as "thr5" with NaNs (failed runs) interleaved: every
	// statistic must equal the NaN-free result, and outlier indices must
	// point into the caller's slice, NaNs included.
	nan := math.NaN()
	xs := []float64{nan, 9.41, 4.87, nan, 9.12, 9.55, 8.98, nan}
	want := Summarize([]float64{9.41, 4.87, 9.12, 9.55, 8.98})
	got := Summarize(xs)
	if got.N != 5 || got.Mean != want.Mean || got.Median != want.Median ||
		got.StdDev != want.StdDev || got.CILow != want.CILow || got.CIHigh != want.CIHigh ||
		got.TrimmedMean != want.TrimmedMean || got.RelCI != want.RelCI {
		t.Errorf("with NaNs: %+v, want %+v", got, want)
	}
	if !slices.Equal(got.Outliers, []int{2}) {
		t.Errorf("Outliers = %v, want [2] (index of 4.87 in the input)", got.Outliers)
	}
}

func TestSummarizeSmallAndDegenerate(t *testing.T) {
	nan := math.NaN()
	for _, xs := range [][]float64{nil, {}, {nan, nan}} {
		s := Summarize(xs)
		if s.N != 0 || !math.IsNaN(s.Mean) || !math.IsNaN(s.Median) || !math.IsNaN(s.TrimmedMean) ||
			!math.IsNaN(s.CILow) || !math.IsNaN(s.Min) || s.Outliers == nil || len(s.Outliers) != 0 {
			t.Errorf("Summarize(%v) = %+v, want N=0 and NaN fields, empty non-nil Outliers", xs, s)
		}
	}

	// n = 1: location is the value, spread and interval are undefined
	// (numpy std(ddof=1) and scipy t.interval with df=0 give nan too).
	s := Summarize([]float64{nan, 7.5})
	if s.N != 1 || s.Mean != 7.5 || s.Median != 7.5 || s.Min != 7.5 || s.Max != 7.5 || s.TrimmedMean != 7.5 {
		t.Errorf("n=1: %+v", s)
	}
	if !math.IsNaN(s.StdDev) || !math.IsNaN(s.CILow) || !math.IsNaN(s.CIHigh) || !math.IsNaN(s.RelCI) {
		t.Errorf("n=1: spread fields should be NaN: %+v", s)
	}

	// All equal: zero spread, the interval collapses onto the mean, and
	// nothing is an outlier (IQR = 0 makes both fences equal the value).
	s = Summarize([]float64{4.2, 4.2, 4.2, 4.2, 4.2})
	if s.StdDev != 0 || s.CILow != 4.2 || s.CIHigh != 4.2 || s.RelCI != 0 || len(s.Outliers) != 0 {
		t.Errorf("all equal: %+v", s)
	}

	// Zero IQR with one deviating value: the deviating value is flagged.
	s = Summarize([]float64{1, 1, 1, 1, 2})
	if !slices.Equal(s.Outliers, []int{4}) {
		t.Errorf("Outliers = %v, want [4]", s.Outliers)
	}

	// Zero mean: RelCI is undefined/infinite rather than a division panic.
	if s := Summarize([]float64{-1, 1}); !math.IsInf(s.RelCI, 1) {
		t.Errorf("RelCI with zero mean = %v, want +Inf", s.RelCI)
	}
	// Negative metric: RelCI stays a positive width.
	if s := Summarize([]float64{-10, -12, -11}); !(s.RelCI > 0) {
		t.Errorf("RelCI for negative mean = %v, want > 0", s.RelCI)
	}
}

// TestTrimmedMeanCut checks the number of values cut for every n the
// benchmarks use, against scipy's int(0.2*n) (verified in Python to equal
// n//5 for all n < 10^6).
func TestTrimmedMeanCut(t *testing.T) {
	for n := 1; n <= 40; n++ {
		xs := make([]float64, n)
		for i := range xs {
			// Powers of two make every subset sum exact, so equality works.
			xs[i] = math.Ldexp(1, i)
		}
		cut := n / 5
		var sum float64
		for _, x := range xs[cut : n-cut] {
			sum += x
		}
		want := sum / float64(n-2*cut)
		if got := Summarize(xs).TrimmedMean; got != want {
			t.Errorf("n=%d: TrimmedMean = %v, want %v (cut %d per end)", n, got, want, cut)
		}
	}
}

// Reference order-statistic ranks from SciPy 1.17.1 (on data 1..n, so the
// interval endpoints are the 1-based ranks):
//
//	python3 -c "import scipy.stats as s; [print(n,l,s.quantile_test(list(range(1,n+1)),p=0.5).confidence_interval(l)) for n,l in [[5,0.95],[6,0.95],[10,0.95],[17,0.95],[30,0.95],[30,0.99],[5,0.9],[8,0.99],[9,0.99],[100,0.95]]]"
func TestMedianCIMatchesSciPy(t *testing.T) {
	cases := []struct {
		n      int
		level  float64
		lo, hi float64 // NaN when SciPy returns nan
	}{
		{5, 0.95, math.NaN(), math.NaN()},
		{6, 0.95, 1, 6},
		{10, 0.95, 2, 9},
		{17, 0.95, 5, 13},
		{30, 0.95, 10, 21},
		{30, 0.99, 8, 23},
		{5, 0.9, 1, 5},
		{8, 0.99, 1, 8}, // [min, max] covers with 1-2/256 = 0.9922 >= 0.99
		{9, 0.99, 1, 9},
		{100, 0.95, 40, 61},
	}
	for _, c := range cases {
		xs := make([]float64, c.n)
		for i := range xs {
			// Reverse order so the function has to sort a copy.
			xs[i] = float64(c.n - i)
		}
		lo, hi, ok := MedianCI(xs, c.level)
		if math.IsNaN(c.lo) {
			if ok || !math.IsNaN(lo) || !math.IsNaN(hi) {
				t.Errorf("n=%d level=%v: got (%v, %v, %v), want not ok", c.n, c.level, lo, hi, ok)
			}
			continue
		}
		if !ok || lo != c.lo || hi != c.hi {
			t.Errorf("n=%d level=%v: got (%v, %v, %v), want (%v, %v, true)", c.n, c.level, lo, hi, ok, c.lo, c.hi)
		}
	}
	// Knife-edge levels equal to an attainable coverage (documented
	// departure from SciPy, which returns lopsided intervals here; SciPy
	// 1.17.1 printed (nan, 5), (1, 9) and (nan, 6) for these three):
	//
	//	python3 -c "import scipy.stats as s; [print(n,l,s.quantile_test(list(range(1,n+1)),p=0.5).confidence_interval(l)) for n,l in [(5,0.9375),(10,0.978515625),(6,0.96875)]]"
	for _, c := range []struct {
		n      int
		level  float64
		lo, hi float64
	}{{5, 0.9375, 1, 5}, {10, 0.978515625, 2, 9}, {6, 0.96875, 1, 6}} {
		lo, hi, ok := MedianCI(seq(1, c.n), c.level)
		if !ok || lo != c.lo || hi != c.hi {
			t.Errorf("knife edge n=%d level=%v: got (%v, %v, %v), want (%v, %v)", c.n, c.level, lo, hi, ok, c.lo, c.hi)
		}
	}
	for _, level := range []float64{0, 1, -0.5, math.NaN()} {
		if _, _, ok := MedianCI([]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, level); ok {
			t.Errorf("level %v accepted", level)
		}
	}
	if _, _, ok := MedianCI([]float64{math.NaN(), 1, 2, 3, 4, 5}, 0.95); ok {
		t.Error("5 non-NaN values accepted at 0.95 (NaN must not count)")
	}
}
