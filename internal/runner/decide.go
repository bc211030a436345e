package runner

import (
	"github.com/cnibench/cnibench/internal/analysis"
)

// DecisiveP is the adjusted p-value below which a comparison counts as decided "different"
// for the precision loop. The loop looks after every round; stopping the first time a
// comparison reached the verdict's own 5 % made identical configurations "different" 12.7 %
// of the time over a dozen looks. At 0.001, held on confirmRounds checks, the verdict the run
// then prints at 5 % is wrong about as often as a fixed number of rounds would make it
// (TestComparisonStoppingRule).
const DecisiveP = 0.001

// undecidedMisses lists, for every comparison the verdict prints, the entries that are not
// yet decided (see decided). Untestable and untested entries are left to untestableMisses: a
// round helps them only by adding samples, which a confirming group gets anyway.
func undecidedMisses(lines []analysis.VerdictLine, margin float64) []Miss {
	if margin <= 0 {
		return nil
	}
	var out []Miss
	for _, l := range lines {
		if l.Path == SetupPath {
			continue
		}
		for _, e := range l.Entries {
			if e.Target == l.Against || (l.Path == "" && e.Target == SetupPath) || e.Verdict == analysis.Untestable || e.Verdict == analysis.Untested {
				continue
			}
			if decided(e, margin) {
				continue
			}
			m := missOf(l, e)
			m.Undecided, m.Against, m.Ratio, m.RatioLow, m.RatioHigh = true, l.Against, e.RatioToBest, e.RatioLow, e.RatioHigh
			m.Points, m.Diff, m.DiffLow, m.DiffHigh = e.Points, e.Diff, e.DiffLow, e.DiffHigh
			out = append(out, m)
		}
	}
	return out
}

// decided reports whether a comparison needs no more rounds: significant at DecisiveP, or not
// significant, its 95 % interval holding 1 (0 in points), and shown equivalent within the
// margin (analysis.Equivalent: the two one-sided tests at the level the look's round may
// spend, analysis.EquivalenceLevel, so that over all the loop's looks a true difference on the
// margin is called equivalent at most 5 % of the time: 1.1 % in TestEquivalenceOverLooks,
// where a 95 % interval inside ±margin at every look, 2.5 % a look, reached 4.2 % at CV 1 %
// and 8.8 % at CV 2 % over a run's looks up to round 16).
// Stopping whether or not the interval held 1 made identical targets "different" 6.0 % of the
// time at CV 1 %; stopping once it was no wider than ±margin, wherever it lay, 6.2-7.2 % at
// CV 1-2 % (the rounds then stop where the noise looks small, and the interval is too
// narrow); a plan of rounds fixed from the first check's noise (Stein's two stages, on 3
// rounds) 7.0 %. TestComparisonStoppingRule has what this rule gives. A figure compared on
// the difference scale (UDP loss) has a margin in points that grows with its loss level
// (analysis.PointsMargin: ±0.02 pp up to 0.5 % loss at the default 2 %).
func decided(e analysis.Ranked, margin float64) bool {
	switch {
	case e.Verdict == "better" || e.Verdict == "worse":
		return e.PValue < DecisiveP
	case e.Verdict != analysis.NotSignificant:
		return false
	case e.Points && !(e.DiffLow <= 0 && 0 <= e.DiffHigh):
		return false
	case !e.Points && !(e.RatioLow <= 1 && 1 <= e.RatioHigh):
		return false
	}
	return analysis.Equivalent(e, margin)
}
