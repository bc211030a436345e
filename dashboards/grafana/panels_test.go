package grafana

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

// scenario is a state of a dashboard's pickers: the values chosen (unnamed variables take
// their default: All where offered, else the first option) and the time range.
type scenario struct {
	name string
	sel  map[string]selection
	tr   timeRange
}

// expectation says what a panel must return in each of its scenarios. check gets the
// scenario with every variable resolved (a repeated panel's own value included) and the rows.
type expectation struct {
	scenarios []scenario
	check     func(ctx context.Context, f *testStore, sc resolved, rows []row) error
}

// resolved is a scenario with each variable's value and options as Grafana would have them.
type resolved struct {
	scope
	name string
}

// values are the values a variable stands for in the scenario (All: every option).
func (r resolved) values(name string) []string {
	if r.sel[name].all {
		return r.options[name]
	}
	return r.sel[name].values
}

// variableCheck says what a query variable's options must be in a scenario.
type variableCheck func(ctx context.Context, f *testStore, sc resolved, options []string) error

// resolve runs the dashboard's variable queries in order, as Grafana does on load, and checks
// each one's options against its expectation.
func resolve(ctx context.Context, f *testStore, d dashboard, sc scenario, vchecks map[string]variableCheck) (resolved, error) {
	r := resolved{name: sc.name, scope: scope{vars: map[string]variable{}, sel: map[string]selection{},
		options: map[string][]string{}, tr: sc.tr}}
	for _, v := range d.Templating.List {
		r.vars[v.Name] = v
		if v.Type == "constant" {
			r.sel[v.Name] = pick(v.Query)
			continue
		}
		q, err := r.interpolate(v.Query)
		if err != nil {
			return r, fmt.Errorf("variable %s: %w", v.Name, err)
		}
		rows, cols, err := f.query(ctx, q)
		if err != nil {
			return r, fmt.Errorf("variable %s: %w\n%s", v.Name, err, q)
		}
		var opts []string
		for _, row := range rows {
			opts = append(opts, row.str(cols[0]))
		}
		r.options[v.Name] = opts
		sel, ok := sc.sel[v.Name]
		switch {
		case ok:
			for _, x := range sel.values {
				if !slices.Contains(opts, x) {
					return r, fmt.Errorf("variable %s: %q is not one of its options %q", v.Name, x, opts)
				}
			}
		case v.IncludeAll:
			sel = allValues
		case len(opts) > 0:
			sel = pick(opts[0])
		}
		r.sel[v.Name] = sel
		check, ok := vchecks[d.UID+"/"+v.Name]
		if !ok {
			return r, fmt.Errorf("variable %s has no expectation", v.Name)
		}
		if err := check(ctx, f, r, opts); err != nil {
			return r, fmt.Errorf("variable %s: %w", v.Name, err)
		}
	}
	return r, nil
}

// checkPanel runs a panel's queries in a scenario, once per value of its repeat variable if
// it repeats, and checks what they return.
func checkPanel(ctx context.Context, f *testStore, d dashboard, p panel, sc scenario, exp expectation, vchecks map[string]variableCheck) error {
	r, err := resolve(ctx, f, d, sc, vchecks)
	if err != nil {
		return err
	}
	runs := []resolved{r}
	if p.Repeat != "" {
		runs = nil
		for _, v := range r.values(p.Repeat) {
			one := r
			one.sel = maps.Clone(r.sel)
			one.sel[p.Repeat] = pick(v)
			runs = append(runs, one)
		}
		if len(runs) == 0 {
			return fmt.Errorf("no value of %s to repeat the panel over", p.Repeat)
		}
	}
	for _, one := range runs {
		for _, tg := range p.Targets {
			q, err := one.interpolate(tg.RawSQL)
			if err != nil {
				return fmt.Errorf("query %s: %w", tg.RefID, err)
			}
			rows, _, err := f.query(ctx, q)
			if err != nil {
				return fmt.Errorf("query %s: %w\n%s", tg.RefID, err, q)
			}
			if err := exp.check(ctx, f, one, rows); err != nil {
				return fmt.Errorf("query %s (%s): %w", tg.RefID, repeatNote(p, one), err)
			}
		}
	}
	return nil
}

func repeatNote(p panel, r resolved) string {
	if p.Repeat == "" {
		return "no repeat"
	}
	return p.Repeat + "=" + strings.Join(r.sel[p.Repeat].values, ",")
}

// missing lists the panels without an expectation and the expectations without a panel.
func missing(dashboards []dashboard, exps map[string]expectation) []string {
	var out []string
	seen := map[string]bool{}
	for _, d := range dashboards {
		for _, p := range d.allPanels() {
			if p.Type == "row" {
				continue
			}
			key := d.UID + "/" + p.Title
			seen[key] = true
			if _, ok := exps[key]; !ok {
				out = append(out, "panel "+key+" has no expectation")
			}
		}
	}
	for _, key := range slices.Sorted(maps.Keys(exps)) {
		if !seen[key] {
			out = append(out, "expectation "+key+" has no panel")
		}
	}
	return out
}

// TestEveryPanel runs every panel's SQL, with Grafana's substitutions, against a PostgreSQL
// store holding the real default-suite run and synthetic labelled runs, in each of the
// panel's scenarios, and checks the rows against what cnibench itself computes from the same
// store (export.List, export.Load, analysis.Summarize, history.Build). A panel without an
// expectation fails the test, as does a variable whose options are not the expected ones.
func TestEveryPanel(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	dashboards := loadDashboards(t)
	exps, vchecks := expectations(), variableChecks()
	for _, m := range missing(dashboards, exps) {
		t.Error(m)
	}
	for _, d := range dashboards {
		for _, p := range d.allPanels() {
			exp, ok := exps[d.UID+"/"+p.Title]
			if !ok || p.Type == "row" {
				continue
			}
			for _, sc := range exp.scenarios {
				t.Run(d.UID+"/"+p.Title+"/"+sc.name, func(t *testing.T) {
					if err := checkPanel(ctx, f, d, p, sc, exp, vchecks); err != nil {
						t.Error(err)
					}
				})
			}
		}
	}
}

// TestBrokenPanelsAreCaught: the checks fail a panel whose SQL computes another figure, drops
// a filter or breaks, and the coverage check names a panel without an expectation.
func TestBrokenPanelsAreCaught(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	dashboards := loadDashboards(t)
	exps, vchecks := expectations(), variableChecks()
	find := func(uid, title string) (dashboard, panel) {
		for _, d := range dashboards {
			for _, p := range d.allPanels() {
				if d.UID == uid && p.Title == title {
					return d, p
				}
			}
		}
		t.Fatalf("no panel %s/%s", uid, title)
		return dashboard{}, panel{}
	}
	for _, tc := range []struct {
		uid, title, old, new string
	}{
		// The median instead of the mean would do as well on symmetric cells: the maximum is
		// plainly another figure.
		{"cnibench-run", "Headline figures", "c.n, c.mean,", "c.n, c.max_value AS mean,"},
		// The plain t-interval, not clipped to the metric's range.
		{"cnibench-run", "Headline figures", "CASE WHEN c.ci_low < 0 THEN 0 ELSE c.ci_low END AS ci_low", "c.ci_low"},
		{"cnibench-runs", "Runs", "AND (',' IN", "OR (',' IN"},
		{"cnibench-history", "${metric}", "AND r.status = 'complete'", ""},
		{"cnibench-run", "Samples", "COUNT(s.seq)", "COUNT(s.sequence)"},
	} {
		d, p := find(tc.uid, tc.title)
		broken := p
		broken.Targets = slices.Clone(p.Targets)
		if !strings.Contains(broken.Targets[0].RawSQL, tc.old) {
			t.Fatalf("%s/%s: no %q in its SQL", tc.uid, tc.title, tc.old)
		}
		broken.Targets[0].RawSQL = strings.Replace(broken.Targets[0].RawSQL, tc.old, tc.new, 1)
		exp := exps[tc.uid+"/"+tc.title]
		caught := false
		for _, sc := range exp.scenarios {
			if err := checkPanel(ctx, f, d, broken, sc, exp, vchecks); err != nil {
				caught = true
				t.Logf("%s/%s with %q: %v", tc.uid, tc.title, tc.new, firstLine(err.Error()))
				break
			}
		}
		if !caught {
			t.Errorf("%s/%s with %q instead of %q passed its checks", tc.uid, tc.title, tc.new, tc.old)
		}
	}
	delete(exps, "cnibench-run/Samples")
	if m := missing(dashboards, exps); len(m) != 1 || !strings.Contains(m[0], "cnibench-run/Samples") {
		t.Errorf("without the Samples expectation, missing = %q", m)
	}
}

func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}
