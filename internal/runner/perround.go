package runner

import (
	"context"
	"fmt"
	"time"
)

// placePods readies the pods of a step when they live per round (suite.PodsRound): every other
// target's pods go, and the step's target comes up at the step's pairs level from none, as one
// burst whose startup, idle memory and Service programming are stored as setup samples of the
// step's round. Steps of one block (a target at a pairs level) follow each other, so a block
// pays this once.
func (r *run) placePods(ctx context.Context, tg *target, st Step, res *Result) error {
	if !r.opts.Suite.PerRound() {
		return nil
	}
	for _, other := range r.targets {
		if other != tg && other.fixture != nil && other.fixture.Up() > 0 && !other.lost.ControlPlane {
			if err := r.scaleTo(ctx, other, 0); err != nil {
				return err
			}
		}
	}
	want := max(st.Combo.Pairs, 1)
	// A block that starts a round comes up afresh even when the previous round ended with the
	// same block: every round times its own burst.
	if tg.fixture.Up() == want && !st.NewBlock {
		return nil
	}
	// From none, whatever was up: every round times the same burst.
	if err := r.scaleTo(ctx, tg, 0); err != nil {
		return err
	}
	stage, err := tg.client.Scale(ctx, tg.fixture, want)
	if err != nil {
		return fmt.Errorf("bring target %s to %d pairs: %w", tg.name, want, err)
	}
	r.progress("target %s: %d pairs up in %.1fs for round %d", tg.name, want, stage.Took.Seconds(), st.Round)
	tg.addSetup(setupPods, want, podMetrics(stage.Pods))
	// Waiting for the kubelets' first figures of new pods takes 10-15 s a block; the warm-up
	// round's would be discarded. Each round also times a new Service on its fresh pods, so
	// that Service programming gets an interval like every other figure.
	if !st.Warmup() {
		r.podMemory(ctx, tg)
		r.timeService(ctx, tg)
	}
	return r.storeSetup(ctx, tg, res, st.Round, st.Warmup())
}

// scaleTo brings a target's pods to a pairs level, none included.
func (r *run) scaleTo(ctx context.Context, tg *target, pairs int) error {
	if tg.fixture.Up() == pairs {
		return nil
	}
	began := time.Now()
	if _, err := tg.client.Scale(ctx, tg.fixture, pairs); err != nil {
		return fmt.Errorf("bring target %s to %d pairs: %w", tg.name, pairs, err)
	}
	if pairs == 0 {
		r.progress("target %s: pods removed in %.1fs", tg.name, time.Since(began).Seconds())
	}
	return nil
}

// storeSetup numbers and stores the target's setup samples gathered so far, after the
// schedule's samples and those already stored.
func (r *run) storeSetup(ctx context.Context, tg *target, res *Result, round int, warmup bool) error {
	for _, s := range tg.setup {
		r.seq++
		s.RunID, s.Seq, s.Round, s.Warmup = r.id, r.seq, round, warmup
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		err := r.opts.Store.AddSample(sctx, s)
		cancel()
		if err != nil {
			return fmt.Errorf("store setup sample of %s: %w", tg.name, err)
		}
		res.Samples = append(res.Samples, s)
	}
	tg.setup = nil
	return nil
}
