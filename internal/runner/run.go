package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/catalog"
	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/progress"
	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/setting"
	"github.com/cnibench/cnibench/internal/spool"
	"github.com/cnibench/cnibench/internal/store"
	"github.com/cnibench/cnibench/internal/suite"
)

// Store is what the runner needs of the results store: what a spool.Writer, which every run
// writes through, needs of it.
type Store = spool.Store

// Options configure a run.
type Options struct {
	Suite   suite.Suite
	Store   Store
	Out     io.Writer // progress
	Version string
	// Namespace to run in; empty creates cnibench-<run> and removes it at the end.
	Namespace string
	Image     string // tools image; the local cluster's own by default
	// ImagePullSecret is a Secret in Namespace holding the credentials of Image's registry,
	// which every pod of the run names; empty: the nodes pull without.
	ImagePullSecret string
	RuntimeClass    string
	Placement       kube.PlacementOptions
	Keep            bool // keep a local cluster the run created
	// NoNodeProbe leaves out the read of the nodes' own network settings (ProbeNodes), and
	// with it the host-network pods that read them.
	NoNodeProbe bool
	// Labels are stored with the run (commit, branch, CNI version...), to select it by later.
	Labels map[string]string
	// Local provides the suite's local clusters; required when the suite has a local target.
	Local LocalProviders
}

// Result is what a run produced.
type Result struct {
	Run     record.Run
	Targets []record.Target
	Samples []record.Sample
}

type run struct {
	opts    Options
	id      string
	began   time.Time
	targets []*target
	// providers are the run's clusters by provider key: the targets of one cluster's runtimes
	// share its provider, which is released once.
	providers map[string]Provider
	// nodeFacts are the node probe's facts by cluster and family: the targets of one cluster
	// share its nodes, whose settings the run never changes.
	nodeFacts map[string]map[string]string
	// log prints the run's status lines, whole when targets report from parallel steps.
	log *progress.Log
	// seq is the last sample number handed out: the schedule's come first, setup samples and
	// extra rounds after.
	seq int
	// lostSamples says, a line each, which samples lost an attempt to the cluster (an API
	// server away, a pod deleted) and what became of them: the run's note keeps them.
	lostSamples []string
}

// maxConsecutiveFailures stops a run whose samples all fail, instead of burning its schedule.
const maxConsecutiveFailures = 8

// Run executes the suite. Samples are stored as they finish; on cancellation the run is
// stored as partial and the cluster objects it created are removed.
func Run(ctx context.Context, o Options) (res Result, err error) {
	r, err := begin(ctx, o, &res)
	if err != nil {
		return res, err
	}
	defer func() { err = r.finish(ctx, &res, err) }()
	byName := map[string]*target{}
	steps := Schedule(r.opts.Suite, r.opts.Suite.Seed)
	// Setup samples are numbered after the schedule's.
	r.seq = len(steps)
	if err := r.checkProfiler(ctx); err != nil {
		return res, err
	}
	if err := r.createMissing(ctx); err != nil {
		return res, err
	}
	for _, t := range r.opts.Suite.Targets {
		tg, err := r.prepare(ctx, t)
		if err != nil {
			return res, err
		}
		byName[t.Name] = tg
		st := record.Target{RunID: r.id, Name: t.Name, Fingerprint: tg.fingerprint}
		if err := r.opts.Store.AddTarget(ctx, st); err != nil {
			return res, fmt.Errorf("store target %s: %w", t.Name, err)
		}
		res.Targets = append(res.Targets, st)
		if err := r.storeSetup(ctx, tg, &res, 0, false); err != nil {
			return res, err
		}
	}
	if err := r.loop(ctx, steps, byName, &res); err != nil {
		return res, err
	}
	if err := r.losses(); err != nil {
		return res, err
	}
	if r.opts.Suite.Precision > 0 {
		return res, r.adapt(ctx, byName, &res)
	}
	return res, nil
}

// begin checks the options, seeds the suite, marks the store's runs of killed processes and
// stores the new run; once it returns a run, finish must end it.
func begin(ctx context.Context, o Options, res *Result) (*run, error) {
	if err := o.Suite.Validate(); err != nil {
		return nil, err
	}
	if o.ImagePullSecret != "" && o.Namespace == "" {
		// Pods name Secrets of their own namespace, and the one a run makes holds none.
		return nil, &setting.Error{Name: "image-pull-secret", Value: o.ImagePullSecret,
			Want: "expected with a namespace holding that Secret (namespace): the namespace a run makes has none"}
	}
	for _, t := range o.Suite.Targets {
		if t.Local != nil && o.Local == nil {
			return nil, fmt.Errorf("target %s: a local cluster, and the run was given no local provider (Options.Local)", t.Name)
		}
	}
	seed := o.Suite.Seed
	if seed == 0 {
		seed = rand.Int64N(1<<53) + 1
	}
	o.Suite.Seed = seed
	r := &run{opts: o, id: store.NewRunID(), began: time.Now(), providers: map[string]Provider{}}
	r.log = progress.New(o.Out, r.began)
	// Samples outlive an outage of the store: kept, retried, and spooled to a file at worst.
	o.Store = spool.New(o.Store, spool.Options{Log: r.progress})
	r.opts.Store = o.Store
	owner, err := record.CurrentOwner()
	if err != nil {
		return nil, fmt.Errorf("identify this process for the store: %w", err)
	}
	res.Run = record.Run{ID: r.id, Started: r.began.UTC(), Status: record.StatusRunning, Suite: o.Suite.YAML(), Seed: seed,
		Version: o.Version, Owner: owner, Labels: o.Labels}
	// Runs of killed processes would otherwise look in progress forever.
	marked, err := o.Store.MarkInterrupted(ctx)
	if err != nil {
		return nil, fmt.Errorf("check the store for killed runs: %w", err)
	}
	for _, m := range marked {
		r.progress("run %s was interrupted (%s); its finished samples stay stored", m.ID, m.Note)
	}
	// Measured with one target per runtime; stored as written, so a re-run expands it again.
	r.opts.Suite = o.Suite.Expand()
	if err := o.Store.CreateRun(ctx, res.Run); err != nil {
		return nil, fmt.Errorf("store run: %w", err)
	}
	r.progress("run %s", r.id)
	return r, nil
}

// finish tears the run down and stores its status: complete, failed with err, or partial when
// it was interrupted or failed after storing samples. It returns err with whatever cleanup
// and the store added.
func (r *run) finish(ctx context.Context, res *Result, err error) error {
	status, note := record.StatusComplete, ""
	switch {
	case ctx.Err() != nil:
		status, note = record.StatusPartial, record.InterruptedNote
	case err != nil:
		status, note = record.StatusFailed, err.Error()
	}
	if len(res.Samples) > 0 && status == record.StatusFailed {
		status = record.StatusPartial
	}
	broken := r.brokenConnections()
	notes := append(append([]string{}, r.lostSamples...), broken...)
	if terr := r.teardown(); terr != nil {
		err = errors.Join(err, fmt.Errorf("cleanup: %w", terr))
		notes = append(notes, "not removed: "+terr.Error())
	}
	if note != "" {
		notes = append([]string{note}, notes...)
	}
	note = strings.Join(notes, "; ")
	res.Run.Status, res.Run.Note, res.Run.Finished = status, note, time.Now().UTC()
	// A fresh context: the run's own may be cancelled, and the status must still be written.
	fctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stored := "stored"
	if ferr := r.opts.Store.FinishRun(fctx, r.id, status, res.Run.Finished, note); ferr != nil {
		err = errors.Join(err, fmt.Errorf("store run status: %w", ferr))
		stored = "taken, not all stored (see the error)"
	}
	if n := len(r.lostSamples); n > 0 {
		r.progress("%d samples lost an attempt to the cluster (the run's note keeps these lines):", n)
		for _, l := range r.lostSamples {
			r.progress("  %s", l)
		}
	}
	for _, l := range broken {
		r.progress("%s", l)
	}
	r.progress("run %s %s: %d samples %s", r.id, status, len(res.Samples), stored)
	return err
}

// loop runs the schedule.
func (r *run) loop(ctx context.Context, steps []Step, byName map[string]*target, res *Result) error {
	failures := 0
	for i, st := range steps {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		tg := byName[st.Combo.Target]
		if tg.lost.ControlPlane {
			continue
		}
		var s record.Sample
		if err := r.placePods(ctx, tg, st, res); err != nil {
			s = r.newSample(tg, st)
			s.Error = err.Error()
		} else {
			s = r.measureWithRetry(ctx, tg, st)
		}
		if ctx.Err() != nil {
			// The sample was cut short by Ctrl-C: it is not a measurement.
			return ctx.Err()
		}
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := r.opts.Store.AddSample(sctx, s)
		cancel()
		if err != nil {
			return fmt.Errorf("store sample %d: %w", s.Seq, err)
		}
		res.Samples = append(res.Samples, s)
		// A failure a lost component explains is no mystery to stop for: the run goes on with
		// the samples that do not need it.
		if s.Error != "" && !tg.lost.any() {
			failures++
		} else {
			failures = 0
		}
		r.report(st, s, i+1, len(steps), Estimate(steps[i+1:]))
		if tg.lost.ControlPlane {
			r.progress("target %s lost its control plane (%s): its remaining samples are skipped", tg.name, tg.lost)
		}
		if failures >= maxConsecutiveFailures {
			return fmt.Errorf("%d samples in a row failed; last: %s", failures, s.Error)
		}
	}
	return nil
}

// report prints one progress line per sample.
func (r *run) report(st Step, s record.Sample, done, total int, remaining time.Duration) {
	what := roundLabel(st, r.opts.Suite.Repetitions)
	value := "FAILED: " + s.Error
	if s.Error == "" {
		value = headline(s)
	}
	width := 0
	for _, t := range r.opts.Suite.Targets {
		width = max(width, len(t.Name))
	}
	if len(s.Flags) > 0 {
		value += " [" + strings.Join(s.Flags, ",") + "]"
	}
	fmt.Fprintf(r.opts.Out, "[%3d/%d] %-11s %-*s %-14s %-20s %-28s eta %s\n", done, total, what, width, s.Target, s.Path, s.Cell().WorkloadLabel(),
		value, remaining.Round(time.Second))
}

// headline is the one figure a progress line shows for a sample.
func headline(s record.Sample) string {
	name := catalog.Primary(s.Metrics)
	if name == "" {
		return ""
	}
	spec, _ := catalog.Lookup(name)
	return fmt.Sprintf("%.4g %s", s.Metrics[name], spec.Unit)
}

// progress prints a line with the time since the run began.
func (r *run) progress(format string, args ...any) { r.log.Printf(format, args...) }
