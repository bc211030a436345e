package suite

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/setting"
)

// runtimesOf is the runtimes a target is measured under: its own, else the suite's.
func (s Suite) runtimesOf(t Target) []string {
	return ownOrSuite(t.Runtimes, s.Runtimes)
}

// validateRuntimes checks what the runtimes lists need of the rest of the suite (their names
// are checkRuntimeNames's): on a local target only the handlers its CRI offers (a remote
// cluster's are checked when the run connects, against its RuntimeClasses), and no tool that
// fails under gVisor.
func (s Suite) validateRuntimes() []error {
	var errs []error
	gvisor := slices.ContainsFunc(s.Runtimes, isGVisor)
	for i, t := range s.Targets {
		field := fmt.Sprintf("targets[%d].runtimes", i)
		if len(t.Runtimes) == 0 {
			field = "runtimes"
		}
		rts := s.runtimesOf(t)
		gvisor = gvisor || slices.ContainsFunc(rts, isGVisor)
		if t.Local == nil {
			continue
		}
		offered := lab.HandlersFor(t.Local.CRI)
		for j, rt := range rts {
			if !slices.Contains(offered, rt) {
				errs = append(errs, invalid(fmt.Sprintf("%s[%d]", field, j), "%q: a local cluster with CRI %s offers %s", rt, t.Local.CRI, strings.Join(offered, ", ")))
			}
		}
	}
	if gvisor {
		for i, w := range s.Workloads {
			if e, err := engine.For(w.Engine(time.Second)); err == nil && e.Name() == engine.NameSockperf {
				errs = append(errs, invalid(fmt.Sprintf("workloads[%d].tool", i), "sockperf's server fails under gVisor (it passes an address to sendto on a connected TCP socket, which gVisor refuses); expected tool: %s for a suite with runtime runsc", engine.NameCnibench))
			}
		}
	}
	return errs
}

// checkRuntimeNames checks one list: RuntimeClass names, each once.
func checkRuntimeNames(field string, list []string) []error {
	var errs []error
	seen := map[string]bool{}
	for i, rt := range list {
		switch {
		case !lab.IsObjectName(rt):
			errs = append(errs, invalid(fmt.Sprintf("%s[%d]", field, i), "%q: expected a RuntimeClass name (lower-case letters, digits, '-', '.')", rt))
		case seen[rt]:
			errs = append(errs, invalid(fmt.Sprintf("%s[%d]", field, i), "%s is listed twice", rt))
		}
		seen[rt] = true
	}
	return errs
}

// isGVisor reports whether a RuntimeClass name is gVisor's, locally or as clusters commonly
// name it.
func isGVisor(name string) bool { return name == lab.RuntimeRunsc || name == "gvisor" }

// withCRIVariants replaces each local target by one target per CRI, each on a cluster of its
// own; a remote cluster's CRI is its own, so it cannot be varied.
func withCRIVariants(targets []Target, cris []string) ([]Target, error) {
	for _, cri := range cris {
		if !slices.Contains(lab.CRIs(), cri) {
			return nil, &setting.Error{Name: "cri", Value: strconv.Quote(cri), Want: "expected one of " + strings.Join(lab.CRIs(), ", ")}
		}
	}
	var out []Target
	for _, t := range targets {
		if t.Local == nil {
			return nil, &setting.Error{Name: "cri", Want: fmt.Sprintf("target %s is a remote cluster, whose CRI is its own", t.Name)}
		}
		for _, cri := range cris {
			v, l := t, *t.Local
			l.CRI = cri
			if len(cris) > 1 {
				v.Name = t.Name + "." + cri
				l.Name = criCluster(l.Name, cri)
			}
			v.Local = &l
			out = append(out, v)
		}
	}
	return out, nil
}

// criCluster names the local cluster of a CRI variant within the 11 characters a cluster name
// may have.
func criCluster(base, cri string) string {
	if base == "" {
		base = "default"
	}
	suffix := "-" + map[string]string{lab.CRIContainerd: "ctd"}[cri]
	if suffix == "-" {
		suffix += cri
	}
	if n := 11 - len(suffix); len(base) > n {
		base = strings.TrimRight(base[:n], "-")
	}
	return base + suffix
}
