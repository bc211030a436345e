package compare

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/internal/analysis"
	"github.com/cnibench/cnibench/internal/catalog"
	"github.com/cnibench/cnibench/internal/setting"
	"github.com/cnibench/cnibench/internal/stats"
)

// Gate turns a comparison into pass, fail or inconclusive, for a pipeline that must not merge
// a regression (a CNI upgrade, a new kernel) and must not block the changes that are not one.
//
// It tests one family: each cell's verdict metric (throughput, connection rate, p50 latency,
// UDP's loss...) and any Metrics added, and fails when, at family-wise level Alpha (Holm over
// every test of the family), B is shown to be worse than A by more than Tolerance: a one-sided
// t test of "the worsening exceeds the tolerance" (stats.MarginTest) on each row's estimate.
// So a run with nothing changed fails at most Alpha of the time however many cells it gates,
// and a true worsening equal to the tolerance fails at most Alpha of the time too; the price
// of that promise is power, which the gate plans and prints: each row's smallest worsening it
// would catch four times in five, and the verdict is inconclusive (not a pass) where that is
// above Detect.
type Gate struct {
	// Tolerance is the accepted worsening, e.g. 0.05: throughput down to 0.95 of A, latency
	// up to 1.05 of A. On the difference scale (UDP loss) it is read in points: 5 % is 5 pp.
	Tolerance float64
	// Detect is the worsening the gate must catch four times in five (0.10: 10 %); 0 means
	// DefaultDetect or twice Tolerance, whichever is larger. It must exceed Tolerance.
	Detect float64
	// Metrics are gated besides each cell's verdict metric, e.g. latency_p99_us.
	Metrics []string
	// Alpha is the family-wise error; 0 means stats.DefaultAlpha.
	Alpha float64
}

// DefaultDetect is the worsening a gate must catch unless told otherwise: the size of a
// regression a CNI or kernel upgrade is worth stopping for, and about what this machine's
// noise lets a default run see.
const DefaultDetect = 0.10

// Gate outcomes, and the exit status each gives `compare --fail-on worse`.
const (
	GatePass         = "pass"
	GateFail         = "fail"
	GateInconclusive = "inconclusive"
	// ExitInconclusive is the exit status of a gate that could not test what it gates:
	// 0 is a pass, 1 a regression (or any error), 3 this.
	ExitInconclusive = 3
)

// FailOnValues are the values of the --fail-on flag.
func FailOnValues() []string { return []string{"never", "worse"} }

// ParseTolerance reads a tolerance written as a percentage ("5%") or a fraction ("0.05").
func ParseTolerance(s string) (float64, error) {
	v, pct := strings.CutSuffix(strings.TrimSpace(s), "%")
	f, err := strconv.ParseFloat(v, 64)
	if pct {
		f /= 100
	}
	if err != nil || !(f >= 0 && f < 1) { // NaN too
		return 0, fmt.Errorf("%q: expected a percentage from 0%% to below 100%%, e.g. 5%%", s)
	}
	return f, nil
}

// Validate checks the gate's settings, naming the one refused.
func (g Gate) Validate() error {
	if g.Tolerance < 0 || g.Tolerance >= 1 {
		return &setting.Error{Name: "tolerance", Value: percent(g.Tolerance), Want: "expected a percentage from 0 % to below 100 %"}
	}
	if d := g.detect(); d <= g.Tolerance || d >= 1 {
		return &setting.Error{Name: "detect", Value: percent(d), Want: "expected a percentage above the tolerance (" + percent(g.Tolerance) + ") and below 100 %"}
	}
	for _, m := range g.Metrics {
		if _, ok := catalog.Lookup(m); !ok {
			return &setting.Error{Name: "gateMetrics", Value: strconv.Quote(m), Want: "expected a metric of the catalogue, e.g. latency_p99_us"}
		}
	}
	return nil
}

func (g Gate) detect() float64 {
	if g.Detect == 0 {
		return max(DefaultDetect, min(2*g.Tolerance, 0.99))
	}
	return g.Detect
}

func (g Gate) alpha() float64 {
	if g.Alpha == 0 {
		return stats.DefaultAlpha
	}
	return g.Alpha
}

// GateRow is one test of the gate's family.
type GateRow struct {
	Row Row
	// Worse is the estimated worsening: relative (0.07: 7 % worse) on the ratio scale, in the
	// metric's units (pp) for Points; negative where B is better. NaN without an estimate.
	Worse float64
	// P is the one-sided p-value of "worse by more than the tolerance", PAdjusted after Holm
	// over the family; NaN where the row could not be tested.
	P, PAdjusted float64
	// Detectable is the smallest worsening (same scale as Worse) the row would catch four
	// times in five at its noise and n, at the level Holm gives the first of the family's
	// tests (Alpha over the family's size): what one regressed cell among unchanged ones
	// needs. +Inf where the row has no estimate.
	Detectable float64
	// Rounds is how many rounds (or samples a side, unpaired) would bring Detectable down to
	// the gate's Detect at this noise; 0 where unknown or more than a thousand.
	Rounds int
	// Failed marks a row shown worse by more than the tolerance; Weak one that could not
	// catch Detect (Detectable above it).
	Failed, Weak bool
}

// GateResult is the gate's judgement of a comparison.
type GateResult struct {
	Tolerance, Detect, Alpha float64
	// Family is the number of tests the error is controlled over.
	Family int
	Rows   []GateRow
	// Skipped are the verdict metrics left out for having fewer than two samples on a side
	// (the setup figures of a run whose pods live for the whole run): no test exists for them.
	Skipped []Row
	Outcome string // GatePass, GateFail or GateInconclusive
}

// Evaluate judges res.
func (g Gate) Evaluate(res Result) GateResult {
	out := GateResult{Tolerance: g.Tolerance, Detect: g.detect(), Alpha: g.alpha()}
	for _, r := range g.family(res.Rows) {
		if r.NA < 2 || r.NB < 2 {
			out.Skipped = append(out.Skipped, r)
			continue
		}
		out.Rows = append(out.Rows, g.test(r))
	}
	out.Family = len(out.Rows)
	p := make([]float64, len(out.Rows))
	for i, r := range out.Rows {
		p[i] = r.P
	}
	adj, err := stats.AdjustPValues(p, stats.AdjustHolm)
	if err != nil { // p-values come from a t distribution: in [0, 1] or NaN
		adj = p
	}
	level := out.Alpha / float64(max(out.Family, 1))
	out.Outcome = GatePass
	for i := range out.Rows {
		gr := &out.Rows[i]
		gr.PAdjusted = adj[i]
		gr.Failed = adj[i] < out.Alpha
		g.plan(gr, level, out.Detect)
		switch {
		case gr.Failed:
			out.Outcome = GateFail
		case gr.Weak && out.Outcome == GatePass:
			out.Outcome = GateInconclusive
		}
	}
	if out.Family == 0 {
		out.Outcome = GateInconclusive
	}
	return out
}

// family picks the gated rows: each cell's verdict metric and the added metrics, where the
// metric has a direction.
func (g Gate) family(rows []Row) []Row {
	inCell := map[Cell]map[string]bool{}
	for _, r := range rows {
		c := Cell{Path: r.Path, Workload: r.Workload, Pairs: r.Pairs}
		if inCell[c] == nil {
			inCell[c] = map[string]bool{}
		}
		inCell[c][r.Metric] = true
	}
	var out []Row
	for _, r := range rows {
		c := Cell{Path: r.Path, Workload: r.Workload, Pairs: r.Pairs}
		if r.Direction == "" {
			continue
		}
		if r.Metric == analysis.VerdictMetric(r.Workload, inCell[c]) || slices.Contains(g.Metrics, r.Metric) {
			out = append(out, r)
		}
	}
	return out
}

// scale maps a row's worsening between the estimate's scale (a log ratio oriented so that
// positive is worse, or points) and what a person reads (a relative worsening, or points).
type scale struct {
	points, higher bool
}

func scaleOf(r Row) scale { return scale{points: r.Points, higher: r.Direction == "higher"} }

// toEst is a worsening as read (0.10: 10 %; points for Points) on the estimate's scale.
func (s scale) toEst(w float64) float64 {
	switch {
	case s.points:
		return w * 100
	case s.higher:
		return -math.Log1p(-w) // B/A = 1-w
	}
	return math.Log1p(w) // B/A = 1+w
}

// fromEst is the inverse of toEst, with points left in points.
func (s scale) fromEst(x float64) float64 {
	switch {
	case s.points:
		return x
	case s.higher:
		return -math.Expm1(-x)
	}
	return math.Expm1(x)
}

// worse orients an estimate so that positive is worse.
func (s scale) worse(e stats.Estimate) stats.Estimate {
	if s.higher {
		e.Center = -e.Center
	}
	return e
}

// test makes a row's one-sided test against the tolerance.
func (g Gate) test(r Row) GateRow {
	s := scaleOf(r)
	e := s.worse(r.Est)
	gr := GateRow{Row: r, Worse: math.NaN(), P: math.NaN(), Detectable: math.Inf(1)}
	if math.IsNaN(e.Center) {
		return gr
	}
	gr.Worse = s.fromEst(e.Center)
	gr.P = stats.MarginTest(e, s.toEst(g.Tolerance))
	if r.Paired && !s.points {
		// Fieller's test, the one the paired interval inverts: exact for normal noise in a
		// round, where the delta method's log-scale test ran at 5-6 % under 20-30 % swings.
		gr.P = r.margin.MarginP(math.Exp(s.orient(s.toEst(g.Tolerance))), !s.higher)
	}
	return gr
}

// orient maps a worsening on the estimate's scale back to the log ratio B/A.
func (s scale) orient(x float64) float64 {
	if s.higher {
		return -x
	}
	return x
}

// plan fills the row's detectable worsening at level and the rounds that would bring it to
// detect.
func (g Gate) plan(gr *GateRow, level, detect float64) {
	s := scaleOf(gr.Row)
	e := gr.Row.Est
	if math.IsNaN(e.SE) || math.IsNaN(gr.P) {
		gr.Weak = true
		return
	}
	margin := s.toEst(g.Tolerance)
	// The noise is estimated from the run itself; planned from the estimate as it is, the
	// rounds fell short more often than not (a plan from 7 rounds of tcp-crr caught 0.70).
	e.SE *= stats.MedianSEFactor(e.DF)
	gr.Detectable = s.fromEst(margin + stats.Detectable(e, level, stats.DefaultPower))
	gr.Weak = !(gr.Detectable <= s.fromEst(s.toEst(detect)))
	n := gr.Row.Blocks
	if n < 2 || e.SE == 0 {
		return
	}
	unit := e.SE * math.Sqrt(float64(n))
	gr.Rounds = stats.RoundsFor(unit, s.toEst(detect)-margin, gr.Row.dfPerBlock(), level, stats.DefaultPower, 1000)
}

// dfPerBlock is the degrees of freedom a round adds to the row's test: one paired (n-1 at n
// rounds), about two unpaired (2n-2 at n a side).
func (r Row) dfPerBlock() float64 {
	if r.Paired {
		return 1
	}
	return 2
}

// Regressions are the rows that fail the gate.
func (g Gate) Regressions(res Result) []Row {
	var out []Row
	for _, r := range g.Evaluate(res).Rows {
		if r.Failed {
			out = append(out, r.Row)
		}
	}
	return out
}

// InconclusiveError is the error of a gate that could not test what it gates: the command
// exits with ExitInconclusive, which a pipeline can tell from a pass and from a regression.
type InconclusiveError struct{ Msg string }

func (e *InconclusiveError) Error() string { return e.Msg }

// ExitStatus is the process's exit status for this error (not ExitCode, which exec.ExitError has).
func (e *InconclusiveError) ExitStatus() int { return ExitInconclusive }

// Check returns nil on a pass, an error listing the regressions on a fail, and an
// *InconclusiveError where the gate could not catch Detect in every gated row.
func (g Gate) Check(res Result) error {
	return g.Evaluate(res).Err(res)
}

// Err is the outcome as an error: nil on a pass.
func (gr GateResult) Err(res Result) error {
	switch gr.Outcome {
	case GateFail:
		var lines []string
		for _, r := range gr.Rows {
			if r.Failed {
				lines = append(lines, "  "+gateLine(r))
			}
		}
		return fmt.Errorf("%d gated metric(s) of %s worse than %s by more than %s (family-wise %s, Holm over %d):\n%s",
			len(lines), res.B.Label(), res.A.Label(), percent(gr.Tolerance), percent(gr.Alpha), gr.Family, strings.Join(lines, "\n"))
	case GateInconclusive:
		return &InconclusiveError{Msg: gr.inconclusive()}
	}
	return nil
}

// inconclusive says why a gate did not pass or fail, and what would let it decide.
func (gr GateResult) inconclusive() string {
	if gr.Family == 0 {
		return "gate inconclusive: no metric both sides measured could be gated"
	}
	weak, rounds, pooled := 0, 0, false
	for _, r := range gr.Rows {
		if r.Weak {
			weak++
			pooled = pooled || r.Row.Pooled
			if r.Rounds == 0 {
				rounds = -1
			} else if rounds >= 0 {
				rounds = max(rounds, r.Rounds)
			}
		}
	}
	msg := fmt.Sprintf("gate inconclusive: %d of %d gated metric(s) could not catch a %s worsening at their noise and n",
		weak, gr.Family, percent(gr.Detect))
	switch {
	case pooled:
		// The noise of a pooled comparison is the spread of the runs' means, which more
		// rounds in every run narrow; more runs in the pool only estimate it better.
		msg += "; against a pooled baseline, more rounds in every run (run --repetitions) narrow the runs' spread, more runs only estimate it"
	case rounds > 0:
		msg += fmt.Sprintf("; %d rounds would (run --repetitions %d --precision off)", rounds, rounds)
	}
	return msg
}

// percent writes a fraction as a percentage: 0.05 as "5 %", 1.5 as "150 %".
func percent(f float64) string {
	return fmt.Sprintf("%.4g %%", f*100)
}
