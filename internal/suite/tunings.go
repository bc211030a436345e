package suite

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/cnibench/cnibench/internal/setting"
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

// validateTunings checks what the tunings lists need of the rest of the suite (their profiles
// are checkTunings's): local targets only (a remote cluster's settings are recorded, never
// changed), and no host-network path (those pods share their node's namespace, which a
// profile leaves as it is).
func (s Suite) validateTunings() []error {
	var errs []error
	tuned := len(s.Tunings) > 0
	for i, t := range s.Targets {
		field := fmt.Sprintf("targets[%d].tunings", i)
		if len(s.tuningsOf(t)) == 0 {
			continue
		}
		tuned = true
		if t.Local == nil {
			if len(t.Tunings) == 0 {
				field = "tunings"
			}
			errs = append(errs, invalid(field, "target %s is a remote cluster: tuning profiles apply to local clusters (a remote cluster's settings are recorded, never changed)", t.Name))
		}
	}
	if s.PerRound() && s.setsOffloads() {
		errs = append(errs, invalid("pods", "round: a tuning's offloads are set on pods deployed once; expected pods: run with offloads"))
	}
	if tuned {
		for i, p := range s.Paths {
			if p == HostNetwork {
				errs = append(errs, invalid(fmt.Sprintf("paths[%d]", i), "%s: its pods share their node's network namespace, which a tuning profile leaves as it is; expected no host-network path in a suite with tunings", p))
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
			errs = append(errs, &setting.Error{Name: fmt.Sprintf("%s[%d]", field, i), Err: err})
			continue
		}
		if seen[p.Name] {
			errs = append(errs, invalid(fmt.Sprintf("%s[%d]", field, i), "profile %s is listed twice", p.Name))
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
