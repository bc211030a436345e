package runner

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/catalog"
	"github.com/cnibench/cnibench/internal/engine"
)

// searchResolution ends a rate search once the rates that kept and lost are within 1/100 of
// the offered maximum of each other: finer than the noise of a one-second trial here.
const searchResolution = 100

// rateSearch is RFC 2544's binary search for throughput: the first trial at the maximum, then
// halfway between the highest rate whose loss stayed within the threshold and the lowest that
// did not, each trial narrowing the gap.
type rateSearch struct {
	max     int64   // the offered maximum, bits per second
	maxLoss float64 // percent
	pass    int64   // the highest rate within the threshold so far; 0: none
	fail    int64   // the lowest rate beyond it so far; 0: none
}

// next returns the rate of the next trial, false when the search is over: the maximum
// passed, or the gap is below the resolution. Rates are whole kbit/s.
func (s *rateSearch) next() (int64, bool) {
	switch {
	case s.pass == s.max:
		return 0, false
	case s.fail == 0:
		return s.max, true
	case s.fail-s.pass <= max(s.max/searchResolution, 1000):
		return 0, false
	}
	return (s.pass + s.fail) / 2 / 1000 * 1000, true
}

// minOffered is the share of a trial's rate its sender must reach for the trial to count as
// offered at that rate: iperf3 sent 720-741 Mbit/s here whatever was asked above that, and
// its loss then is that of what it sent, which says nothing of the rate asked.
const minOffered = 0.95

// record notes a trial's loss and the rate its sender reached, and reports whether the
// trial passed: the rate offered in full and the loss within the threshold.
func (s *rateSearch) record(rate int64, loss float64, sent float64) bool {
	if loss <= s.maxLoss && sent >= minOffered*float64(rate) {
		s.pass = max(s.pass, rate)
		return true
	}
	if s.fail == 0 || rate < s.fail {
		s.fail = rate
	}
	return false
}

// searchRate measures a udp-stream rate search (engine.Workload.Search): its trials
// (engine.Workload.SearchTrials, each TrialDuration long), every pair at the trial's rate,
// released together. The figures are the best passing trial's, with the rate found (summed
// over pairs) as rfc2544_gbps, 0 when no trial passed (the figures are then the last
// trial's). The raw output holds every trial's, each after a line naming its rate.
func (r *run) searchRate(ctx context.Context, tg *target, eng engine.Engine, ew engine.Workload, ends []pairEnd) (pairFigures, error) {
	top, err := ew.RateBitsPerSec()
	if err != nil {
		return pairFigures{}, err
	}
	s := &rateSearch{max: top, maxLoss: ew.MaxLoss}
	n := len(ends)
	var raw strings.Builder
	var best, last pairFigures
	found := false
	for trial := 1; trial <= ew.SearchTrials(); trial++ {
		rate, more := s.next()
		if !more {
			break
		}
		tw := ew.Trial(rate)
		argvs := make([][]string, n)
		for i, e := range ends {
			argvs[i] = clientArgv(eng, tw, e, n, false)
		}
		reports, err := r.runPairs(ctx, tg, argvs, ends, tw.Duration+45*time.Second+time.Duration(n)*200*time.Millisecond, releaseHooks{})
		if err != nil {
			return pairFigures{}, fmt.Errorf("search trial %d at %s: %w", trial, tw.Rate, err)
		}
		fig, err := combine(eng, tw, reports)
		if err != nil {
			return pairFigures{}, fmt.Errorf("search trial %d at %s: %w", trial, tw.Rate, err)
		}
		// What the senders put on the wire, per pair: what arrived over what was not lost.
		loss := fig.metrics[catalog.Loss]
		sent := fig.metrics[catalog.Throughput] * 1e9 / float64(n) / max(1-loss/100, 1e-9)
		pass := s.record(rate, loss, sent)
		fmt.Fprintf(&raw, "# trial %d: %sbit/s offered a pair, %.4g Mbit/s sent, loss %.4g %% (passed: %v)\n%s\n",
			trial, tw.Rate, sent/1e6, loss, pass, fig.raw)
		last = fig
		if pass && rate == s.pass {
			best, found = fig, true
		}
	}
	out := last
	if found {
		out = best
	}
	out.metrics = maps.Clone(out.metrics)
	out.metrics[catalog.RFC2544] = float64(s.pass) * float64(n) / 1e9
	out.raw = raw.String()
	return out, nil
}
