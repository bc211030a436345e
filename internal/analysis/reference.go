package analysis

import (
	"math"

	"github.com/cnibench/cnibench/internal/catalog"
	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/stats"
	"github.com/cnibench/cnibench/internal/suite"
)

// ReferenceTable sets a published study's figures beside a run's.
type ReferenceTable struct {
	Study string         `json:"study"`
	Rows  []ReferenceRow `json:"rows"`
}

// ReferenceRow is one of the study's figures and the run's figure for the same cell.
type ReferenceRow struct {
	suite.ReferenceFigure
	Unit string `json:"unit"`
	// Measured says the run has samples of the cell (of both targets for a ratio figure).
	Measured bool `json:"measured"`
	// Ours is the run's figure with its 95 % interval: the cell's mean or, for a figure
	// with Against, the ratio of the two targets' means (paired by round where it can be).
	// N is the samples behind it (per target for a ratio).
	Ours float64 `json:"ours"`
	Low  float64 `json:"ciLow"`
	High float64 `json:"ciHigh"`
	N    int     `json:"n"`
	// Ratio is the run's figure over the study's (NaN where the study's is 0).
	Ratio float64 `json:"ratio"`
	// Direction compares what the study and the run say of the two targets: which one is
	// higher (a ratio figure, or an absolute figure whose partner, the other target's figure
	// of the same cell, is also in the study). "agrees", "opposite", or "" with nothing to
	// compare. Decided says the run's own comparison was significant.
	Direction string `json:"direction,omitempty"`
	Decided   bool   `json:"decided,omitempty"`
}

// Directions of ReferenceRow.
const (
	DirectionAgrees   = "agrees"
	DirectionOpposite = "opposite"
)

// References sets each figure of the study beside the run's; nil without a study.
func References(ref *suite.Reference, samples []record.Sample) *ReferenceTable {
	if ref == nil {
		return nil
	}
	type key struct {
		target, path, workload, metric string
		pairs                          int
	}
	values := map[key][]stats.Obs{}
	for _, s := range samples {
		if s.Warmup || s.Error != "" {
			continue
		}
		for m, v := range s.Metrics {
			k := key{s.Target, s.Path, s.Workload, m, s.Cell().Pairs}
			values[k] = append(values[k], obs(s, v))
		}
	}
	t := &ReferenceTable{Study: ref.Study}
	for _, f := range ref.Figures {
		spec, _ := catalog.Lookup(f.Metric)
		row := ReferenceRow{ReferenceFigure: f, Unit: spec.Unit, Ours: math.NaN(), Low: math.NaN(), High: math.NaN(), Ratio: math.NaN()}
		pairs := max(f.Pairs, 1)
		mine := values[key{f.Target, f.Path, f.Workload, f.Metric, pairs}]
		switch {
		case f.Against != "":
			row.Unit = "x"
			against := values[key{f.Against, f.Path, f.Workload, f.Metric, pairs}]
			if c, ok := row.compareWith(against, mine, f.Value > 1, f.Value < 1); ok {
				row.Measured, row.Ours, row.Low, row.High, row.N = true, c.Ratio, c.RatioLow, c.RatioHigh, min(len(against), len(mine))
			}
		case len(mine) > 0:
			figure := mine
			if f.PerPair {
				figure = perPair(mine, pairs)
			}
			s := SummarizeMetric(f.Metric, stats.Values(figure))
			row.Measured, row.Ours, row.Low, row.High, row.N = true, s.Mean, s.CILow, s.CIHigh, s.N
			if p, ok := partner(ref.Figures, f); ok {
				row.compareWith(values[key{p.Target, f.Path, f.Workload, f.Metric, pairs}], mine, f.Value > p.Value, f.Value < p.Value)
			}
		}
		if row.Measured && f.Value != 0 {
			row.Ratio = row.Ours / f.Value
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// perPair divides each of a cell's summed figures by its pairs, for a study that reported
// the figure per container.
func perPair(obs []stats.Obs, pairs int) []stats.Obs {
	out := make([]stats.Obs, len(obs))
	for i, o := range obs {
		o.Value /= float64(pairs)
		out[i] = o
	}
	return out
}

// partner is the study's figure of the other target for the same cell, when there is one.
func partner(figures []suite.ReferenceFigure, f suite.ReferenceFigure) (suite.ReferenceFigure, bool) {
	for _, p := range figures {
		if p.Against == "" && p.Target != f.Target && p.Path == f.Path && p.Workload == f.Workload && p.Metric == f.Metric && max(p.Pairs, 1) == max(f.Pairs, 1) {
			return p, true
		}
	}
	return suite.ReferenceFigure{}, false
}

// compareWith compares the figure's samples (mine) with base's as the verdict does, and sets
// whether the run orders the two as the study did (studyHigher: the study found the figure's
// target higher; studyLower: lower); ok is false when there is no comparison to make.
func (r *ReferenceRow) compareWith(base, mine []stats.Obs, studyHigher, studyLower bool) (stats.Comparison, bool) {
	c, err := stats.CompareBlocked(base, mine, true, stats.PairAuto, stats.CompareOptions{Seed: 1})
	if err != nil {
		return c, false
	}
	r.Direction, r.Decided = agreement(studyHigher, studyLower, c)
	return c, true
}

// agreement says whether the run orders the two targets as the study did (higher: the study
// found the figure's target higher, lower: lower; neither: a tie, nothing to compare).
func agreement(higher, lower bool, c stats.Comparison) (string, bool) {
	if !higher && !lower {
		return "", false
	}
	decided := c.Verdict == stats.VerdictBetter || c.Verdict == stats.VerdictWorse
	if (c.Ratio > 1) == higher {
		return DirectionAgrees, decided
	}
	return DirectionOpposite, decided
}
