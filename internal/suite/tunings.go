package suite

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/cnibench/cnibench/internal/tuning"
)

// tuningsOf is the tuning profiles a target is measured under: its own, else the suite's.
func (s Suite) tuningsOf(t Target) []string {
	return ownOrSuite(t.Tunings, s.Tunings)
}

// tuningName is the name a tuning reference gives a target: a builtin's name, or a file's
// profile name (its base name when it cannot be read; validation reports why).
func tuningName(ref string) string {
	if p, err := tuning.Load(ref); err == nil {
		return p.Name
	}
	return strings.TrimSuffix(filepath.Base(ref), filepath.Ext(ref))
}

// validateTunings checks the tunings lists: profiles that load, each once, on local targets
// only (a remote cluster's settings are recorded, never changed), and no host-network path
// (those pods share their node's namespace, which a profile leaves as it is).
func (s Suite) validateTunings() []error {
	errs := checkTunings("tunings", s.Tunings)
	tuned := len(s.Tunings) > 0
	for i, t := range s.Targets {
		field := fmt.Sprintf("targets[%d].tunings", i)
		errs = append(errs, checkTunings(field, t.Tunings)...)
		if len(s.tuningsOf(t)) == 0 {
			continue
		}
		tuned = true
		if t.Local == nil {
			if len(t.Tunings) == 0 {
				field = "tunings"
			}
			errs = append(errs, fmt.Errorf("%s: target %s is a remote cluster: tuning profiles apply to local clusters (a remote cluster's settings are recorded, never changed)", field, t.Name))
		}
	}
	if s.PerRound() && s.setsOffloads() {
		errs = append(errs, fmt.Errorf("pods: round: a tuning's offloads are set on pods deployed once; expected pods: run with offloads"))
	}
	if tuned {
		for i, p := range s.Paths {
			if p == HostNetwork {
				errs = append(errs, fmt.Errorf("paths[%d]: %s: its pods share their node's network namespace, which a tuning profile leaves as it is; expected no host-network path in a suite with tunings", i, p))
			}
		}
	}
	return errs
}

// checkTunings checks one list: profiles that load, each name once.
func checkTunings(field string, list []string) []error {
	var errs []error
	seen := map[string]bool{}
	for i, ref := range list {
		p, err := tuning.Load(ref)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s[%d]: %w", field, i, err))
			continue
		}
		if seen[p.Name] {
			errs = append(errs, fmt.Errorf("%s[%d]: profile %s is listed twice", field, i, p.Name))
		}
		seen[p.Name] = true
	}
	return errs
}

// setsOffloads reports whether a tuning of any target sets offloads.
func (s Suite) setsOffloads() bool {
	for _, t := range s.Targets {
		for _, ref := range s.tuningsOf(t) {
			if p, err := tuning.Load(ref); err == nil && len(p.Offloads) > 0 {
				return true
			}
		}
	}
	return false
}
