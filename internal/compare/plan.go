package compare

import (
	"context"
	"fmt"
	"io"
	"math"
	"text/tabwriter"

	"github.com/cnibench/cnibench/internal/export"
	"github.com/cnibench/cnibench/internal/stats"
)

// PlanRow is one gated metric's power at a number of rounds, from a stored run's noise.
type PlanRow struct {
	Row Row
	// Detectable is the smallest worsening caught four times in five at the planned rounds.
	Detectable float64
	// Rounds is how many rounds would catch the gate's Detect (0: more than a thousand).
	Rounds int
}

// Plan is what a gate could see in a planned run, from the noise of a stored one.
type Plan struct {
	Noise  string // where the noise comes from
	Rounds int    // the planned run's rounds
	GateResult
	Planned []PlanRow
}

// NoiseFrom reads a stored run's noise as the gate would meet it. A run of two or more
// targets gives the first two targets' paired comparison (a run's targets are measured in the
// same rounds); a run of one target gives the spread of its rounds, as two runs of it compared
// unpaired would see it.
func NoiseFrom(ctx context.Context, src export.Source, run string) (Result, string, error) {
	b, err := export.Load(ctx, src, run)
	if err != nil {
		return Result{}, "", fmt.Errorf("noise from run %s: %w", run, err)
	}
	if len(b.Targets) >= 2 {
		res, err := Compare(ctx, src, Options{A: Side{Run: b.Run.ID, Target: b.Targets[0].Name},
			B: Side{Run: b.Run.ID, Target: b.Targets[1].Name}, Seed: DefaultSeed})
		return res, fmt.Sprintf("run %s, %s against %s, paired by round", b.Run.ID, b.Targets[1].Name, b.Targets[0].Name), err
	}
	if len(b.Targets) == 0 {
		return Result{}, "", fmt.Errorf("noise from run %s: it has no targets", run)
	}
	res := Result{Alpha: stats.DefaultAlpha}
	for k, obs := range collect(b.Samples).values {
		res.Rows = append(res.Rows, selfNoiseRow(k, stats.Values(obs)))
	}
	sortRows(res.Rows)
	return res, fmt.Sprintf("run %s, the spread of its rounds, two runs compared unpaired", b.Run.ID), nil
}

// selfNoiseRow is the row two runs of n rounds each, with the spread of xs, would give with
// nothing changed: the log values' standard deviation s makes the log ratio's standard error
// s·sqrt(2/n) with 2n-2 degrees of freedom.
func selfNoiseRow(k key, xs []float64) Row {
	n := len(xs)
	r := newRow(k, n, n)
	r.Est = stats.Estimate{Center: 0, SE: math.NaN(), DF: float64(2*n - 2)}
	if n < 2 || (!r.Points && minOf(xs) <= 0) {
		return r
	}
	scaled := make([]float64, n)
	for i, x := range xs {
		scaled[i] = x // points: the difference scale
		if !r.Points {
			scaled[i] = math.Log(x)
		}
	}
	s := stats.Summarize(scaled).StdDev
	r.Est.SE, r.Blocks = s*math.Sqrt(2/float64(n)), n
	return r
}

// PlanFor is the gate's power at rounds, per gated metric, from the noise in res.
func (g Gate) PlanFor(res Result, noise string, rounds int) Plan {
	p := Plan{Noise: noise, Rounds: rounds, GateResult: g.Evaluate(res)}
	level := p.Alpha / float64(max(p.Family, 1))
	for _, r := range p.Rows {
		pr := PlanRow{Row: r.Row, Detectable: math.Inf(1), Rounds: r.Rounds}
		e, n := r.Row.Est, r.Row.Blocks
		if n >= 2 && rounds >= 2 && !math.IsNaN(e.SE) {
			at := stats.Estimate{SE: e.SE * stats.MedianSEFactor(e.DF) * math.Sqrt(float64(n)/float64(rounds)),
				DF: r.Row.dfPerBlock() * float64(rounds-1)}
			s := scaleOf(r.Row)
			pr.Detectable = s.fromEst(s.toEst(g.Tolerance) + stats.Detectable(at, level, stats.DefaultPower))
		}
		p.Planned = append(p.Planned, pr)
	}
	return p
}

// WritePlan prints a plan: the rounds the gate needs first, then each gated metric.
func WritePlan(w io.Writer, p Plan) error {
	need, unknown := 0, 0
	for _, r := range p.Planned {
		if r.Rounds == 0 {
			unknown++
		}
		need = max(need, r.Rounds)
	}
	fmt.Fprintf(w, "\ngate plan from %s: %d gated metric(s), family-wise %s (Holm), catching %s four times in five\n",
		p.Noise, p.Family, percent(p.Alpha), percent(p.Detect))
	switch {
	case need == 0:
		fmt.Fprintln(w, "  no gated metric with a noise estimate in that run")
	case need <= p.Rounds && unknown == 0:
		fmt.Fprintf(w, "  %d rounds are enough: every gated metric needs at most %d\n", p.Rounds, need)
	default:
		fmt.Fprintf(w, "  %d rounds are not enough: the noisiest gated metric needs %d (--repetitions %d --precision off)\n", p.Rounds, need, need)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range p.Planned {
		gr := GateRow{Row: r.Row}
		rounds := "more than 1000"
		if r.Rounds > 0 {
			rounds = fmt.Sprint(r.Rounds)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\tat %d rounds catches %s\tneeds %s rounds\n", r.Row.Path, r.Row.label(), r.Row.Metric,
			p.Rounds, worsening(gr, r.Detectable), rounds)
	}
	return tw.Flush()
}
