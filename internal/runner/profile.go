package runner

import (
	"cmp"
	"context"
	"fmt"

	"github.com/cnibench/cnibench/internal/profile"
	"github.com/cnibench/cnibench/internal/suite"
)

// profileNotAvailable is the fingerprint of a remote target in a profiled run: its nodes are
// not this host's, and sampling them would need a privileged pod on each.
const profileNotAvailable = "not available: a remote cluster's nodes are not this host (cnibench profiles its local clusters)"

// cpuProfiler records the host's CPUs: started before a sample's clients, enabled when they
// are released.
type cpuProfiler interface {
	Start(ctx context.Context) (*profile.Recording, error)
}

// checkProfiler makes sure, before anything is deployed, that a run asked to profile its local
// targets can: perf present and allowed to sample every CPU.
func (r *run) checkProfiler(ctx context.Context) error {
	if !r.opts.Suite.Profile {
		return nil
	}
	for _, t := range r.opts.Suite.Targets {
		if t.Local != nil {
			if err := (profile.Recorder{}).Check(ctx); err != nil {
				return fmt.Errorf("profile: %w", err)
			}
			return nil
		}
	}
	return nil
}

// profilerFor says how a target's samples are profiled, and records it in its fingerprint: in
// dir, where its provider runs the nodes on this host's CPUs.
func (r *run) profilerFor(t suite.Target, tg *target, dir string) {
	if !r.opts.Suite.Profile {
		return
	}
	if dir == "" {
		tg.fingerprint["cpu_profile"] = profileNotAvailable
		r.progress("target %s: CPU profile %s", t.Name, profileNotAvailable)
		return
	}
	tg.profiler = profile.Recorder{Dir: dir}
	tg.fingerprint["cpu_profile"] = fmt.Sprintf("perf record -F %d -a -g: every CPU of the host during each measured window", profile.Frequency)
}

// profiling is one sample's recording, started with the clients and enabled right before their
// release.
type profiling struct {
	rec *profile.Recording
	err error
}

// start launches perf with its sampling off; an error is kept for the sample, never failing it.
func (p *profiling) start(ctx context.Context, pr cpuProfiler) {
	if pr != nil {
		p.rec, p.err = pr.Start(ctx)
	}
}

// enable turns sampling on: the clients are about to be released.
func (p *profiling) enable() {
	if p.rec != nil && p.err == nil {
		p.err = p.rec.Enable()
	}
}

// folded stops the recording and returns what the sample stores: the folded stacks under a
// line saying how they were recorded, or a line saying why there are none.
func (p *profiling) folded(ctx context.Context) string {
	if p.rec == nil && p.err == nil {
		return ""
	}
	if p.rec != nil {
		f, err := p.rec.Stop(ctx)
		if p.err == nil && err == nil {
			return fmt.Sprintf("# perf record -F %d -a -g, %.2f s from the clients' release to their reports\n%s", profile.Frequency, p.rec.Window().Seconds(), f)
		}
		p.err = cmp.Or(p.err, err)
	}
	return "# not recorded: " + p.err.Error() + "\n"
}
