package suite

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/setting"
)

// familiesOf is the IP families a target's traffic takes: its own, else the suite's.
func (s Suite) familiesOf(t Target) []string {
	return ownOrSuite(t.Families, s.Families)
}

// MeasuresIPv6 reports whether any target's traffic takes IPv6, by its families or, with none
// listed, by its local cluster's family.
func (s Suite) MeasuresIPv6() bool {
	for _, t := range s.Targets {
		if slices.Contains(s.familiesOf(t), lab.IPv6) || (t.Local != nil && t.Local.IPFamily == lab.IPv6 && len(s.familiesOf(t)) == 0) {
			return true
		}
	}
	return slices.Contains(s.Families, lab.IPv6)
}

// clusterFamily is the family of a local cluster of a datapath that carries every family in
// list: dual for both, and for IPv6 on a datapath whose IPv6 needs IPv4 beside it.
func clusterFamily(list []string, datapath string) string {
	v4, v6 := slices.Contains(list, lab.IPv4), slices.Contains(list, lab.IPv6)
	dp, err := lab.LookupDatapath(datapath)
	switch {
	case v6 && (v4 || (err == nil && dp.NeedsIPv4 != "")):
		return lab.DualStack
	case v6:
		return lab.IPv6
	}
	return ""
}

// withFamilies gives each local target whose cluster family is unset the family its traffic
// needs, and pins the tool of every workload whose default engine cannot carry IPv6 in a suite
// that measures IPv6, so that both families are measured by one tool.
func (s Suite) withFamilies() Suite {
	// Copies: the suite as written is what the run stores.
	s.Targets = slices.Clone(s.Targets)
	for i, t := range s.Targets {
		if t.Local != nil && t.Local.IPFamily == "" {
			if f := clusterFamily(s.familiesOf(t), t.Local.Datapath); f != "" {
				l := *t.Local
				l.IPFamily = f
				s.Targets[i].Local = &l
			}
		}
	}
	if !s.MeasuresIPv6() {
		return s
	}
	s.Workloads = slices.Clone(s.Workloads)
	for i, w := range s.Workloads {
		if w.Tool != "" {
			continue
		}
		if e, err := engine.For(w.Engine(s.Duration.Duration)); err == nil && !engine.CarriesIPv6(e) {
			s.Workloads[i].Tool = engine.NameCnibench
		}
	}
	return s
}

// validateFamilies checks what the families lists need of the rest of the suite (their
// entries are checkFamilies's): a local cluster whose family carries them; no gateway path
// over IPv6 (the split is IPv4), and no workload whose named tool cannot carry IPv6. The egress
// paths carry both: whether a remote target's external host has an address of the family is
// known at its preparation.
func (s Suite) validateFamilies() []error {
	var errs []error
	for i, t := range s.Targets {
		field := fmt.Sprintf("targets[%d].families", i)
		if len(t.Families) == 0 {
			field = "families"
		}
		fams := s.familiesOf(t)
		if t.Local == nil {
			continue
		}
		if t.Local.IPFamily == "" {
			// The cluster the run would build for them.
			if err := lab.CheckIPFamily(clusterFamily(fams, t.Local.Datapath), t.Local.Datapath); err != nil {
				errs = append(errs, &setting.Error{Name: field, Err: fmt.Errorf("target %s's traffic in %s needs a cluster of that family: %w", t.Name, strings.Join(fams, " and "), err)})
			}
			continue
		}
		for _, f := range fams {
			if !lab.HasFamily(t.Local.IPFamily, f) {
				errs = append(errs, invalid(field, "target %s's local cluster is %s (local.ipFamily): expected %s or dual there, or leave ipFamily out", t.Name, t.Local.IPFamily, f))
			}
		}
	}
	if !s.MeasuresIPv6() {
		return errs
	}
	for i, p := range s.Paths {
		if p == Gateway {
			errs = append(errs, invalid(fmt.Sprintf("paths[%d]", i), "%s: the Gateway API split is measured over IPv4 only; expected no gateway path in a suite that measures IPv6", p))
		}
	}
	for i, w := range s.Workloads {
		if w.Tool == "" {
			continue
		}
		if e, err := engine.ByName(w.Tool); err == nil && !engine.CarriesIPv6(e) {
			errs = append(errs, invalid(fmt.Sprintf("workloads[%d].tool", i), "%s cannot carry IPv6; expected tool: %s (or leave it out) in a suite that measures IPv6", w.Tool, engine.NameCnibench))
		}
	}
	return errs
}

// checkFamilies checks one list: ipv4 or ipv6, each once.
func checkFamilies(field string, list []string) []error {
	var errs []error
	for i, f := range list {
		if !slices.Contains(lab.TrafficFamilies(), f) {
			errs = append(errs, invalid(fmt.Sprintf("%s[%d]", field, i), "%q: expected %s", f, strings.Join(lab.TrafficFamilies(), " or ")))
		} else if slices.Index(list, f) != i {
			errs = append(errs, invalid(fmt.Sprintf("%s[%d]", field, i), "%s is listed twice", f))
		}
	}
	return errs
}
