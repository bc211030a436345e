package grafana

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// What Grafana does to a PostgreSQL panel's SQL before the database sees it, in two steps:
//
//  1. The browser replaces the dashboard's variables (templateSrv.replace with the SQL data
//     source's interpolateVariable): $var, ${var}, ${var:format} and [[var]]. A variable that is
//     multi-value or has an All option gives its values each quoted as an SQL string ('' for a
//     quote) and joined by commas; any other gives its value with quotes doubled but unquoted.
//     All gives the variable's custom all value as it is, else every option. A repeated panel
//     sees its own value of the repeat variable, formatted the same way. Names that are not
//     variables are left alone.
//  2. The server expands the macros (pkg/tsdb/grafana-postgresql-datasource/macros.go):
//     $__time(col) is `col AS "time"`, $__timeFilter(col) is `col BETWEEN 'from' AND 'to'`,
//     $__timeFrom() and $__timeTo() are 'from' and 'to', as RFC 3339 UTC with nanoseconds.
//
// Only those formats and macros are implemented; a query using another one, or naming a
// variable the dashboard lacks, is an error here rather than SQL that Grafana would send
// differently.

// timeRange is the dashboard's time picker.
type timeRange struct{ from, to time.Time }

// selection is a variable's current value: the values chosen, or All.
type selection struct {
	values []string
	all    bool
}

func pick(values ...string) selection { return selection{values: values} }

var allValues = selection{all: true}

// scope is what a query is interpolated with.
type scope struct {
	vars    map[string]variable  // the dashboard's variables by name
	sel     map[string]selection // their current values
	options map[string][]string  // each query variable's options, what All stands for without a custom all value
	tr      timeRange
}

// varRef is templateSrv's variable syntax: $name, [[name:format]], ${name.field:format}.
var varRef = regexp.MustCompile(`\$(\w+)|\[\[(\w+?)(?::(\w+))?\]\]|\$\{(\w+)(?:\.([^:^\}]+))?(?::([^\}]+))?\}`)

// macroRef is the macro engine's syntax: $name(arguments without a closing parenthesis).
var macroRef = regexp.MustCompile(`\$([_a-zA-Z0-9]+)\(([^\)]*)\)`)

// leftover is anything that still looks like a variable or macro after both steps.
var leftover = regexp.MustCompile(`\$\{?\w|\[\[\w`)

// interpolate turns a panel's or variable's SQL into what Grafana sends the database.
func (s scope) interpolate(sql string) (string, error) {
	var firstErr error
	fail := func(err error) {
		if firstErr == nil {
			firstErr = err
		}
	}
	out := varRef.ReplaceAllStringFunc(sql, func(m string) string {
		g := varRef.FindStringSubmatch(m)
		name, format := g[1]+g[2]+g[4], g[3]+g[6]
		v, ok := s.vars[name]
		if !ok {
			return m // a macro, or not a variable: Grafana leaves it
		}
		if g[5] != "" {
			fail(fmt.Errorf("%s: variable fields are not implemented", m))
			return m
		}
		text, err := s.format(v, format)
		if err != nil {
			fail(fmt.Errorf("%s: %w", m, err))
		}
		return text
	})
	out = macroRef.ReplaceAllStringFunc(out, func(m string) string {
		g := macroRef.FindStringSubmatch(m)
		text, err := s.macro(g[1], g[2])
		if err != nil {
			fail(fmt.Errorf("%s: %w", m, err))
		}
		return text
	})
	if firstErr != nil {
		return "", firstErr
	}
	if at := leftover.FindStringIndex(out); at != nil {
		return "", fmt.Errorf("unknown variable or macro at %q", out[at[0]:min(len(out), at[0]+30)])
	}
	return out, nil
}

// format is the text of variable v's current value in the format asked ("" for the data
// source's own).
func (s scope) format(v variable, format string) (string, error) {
	sel, ok := s.sel[v.Name]
	if !ok {
		return "", fmt.Errorf("no value for variable %s", v.Name)
	}
	values := sel.values
	if sel.all {
		if v.AllValue != "" {
			return v.AllValue, nil
		}
		values = s.options[v.Name]
	}
	quoted := func() string {
		q := make([]string, len(values))
		for i, x := range values {
			q[i] = "'" + strings.ReplaceAll(x, "'", "''") + "'"
		}
		return strings.Join(q, ",")
	}
	switch format {
	case "":
		if v.Multi || v.IncludeAll {
			return quoted(), nil
		}
		if len(values) != 1 {
			return "", fmt.Errorf("%d values for single-value variable %s", len(values), v.Name)
		}
		return strings.ReplaceAll(values[0], "'", "''"), nil
	case "sqlstring":
		return quoted(), nil
	case "csv", "raw":
		return strings.Join(values, ","), nil
	}
	return "", fmt.Errorf("format %q is not implemented", format)
}

// macro expands the PostgreSQL data source's macro name with its arguments.
func (s scope) macro(name, args string) (string, error) {
	arg := strings.TrimSpace(strings.Split(args, ",")[0])
	from, to := s.tr.from.UTC().Format(time.RFC3339Nano), s.tr.to.UTC().Format(time.RFC3339Nano)
	switch name {
	case "__time":
		if arg == "" {
			return "", fmt.Errorf("missing time column argument")
		}
		return arg + ` AS "time"`, nil
	case "__timeFilter":
		if arg == "" {
			return "", fmt.Errorf("missing time column argument")
		}
		return fmt.Sprintf("%s BETWEEN '%s' AND '%s'", arg, from, to), nil
	case "__timeFrom":
		return "'" + from + "'", nil
	case "__timeTo":
		return "'" + to + "'", nil
	}
	return "", fmt.Errorf("macro %s is not implemented", name)
}

// TestInterpolate: the substitution as Grafana's documentation and sources give it.
func TestInterpolate(t *testing.T) {
	tr := timeRange{time.Date(2017, 4, 21, 5, 1, 17, 0, time.UTC), time.Date(2017, 4, 21, 7, 6, 17, 500, time.FixedZone("CEST", 7200))}
	s := scope{
		vars: map[string]variable{
			"host":  {Name: "host"},
			"hosts": {Name: "hosts", Multi: true},
			"any":   {Name: "any", Multi: true, IncludeAll: true},
			"key":   {Name: "key", Multi: true, IncludeAll: true, AllValue: "','"},
		},
		sel: map[string]selection{
			"host": pick("o'brien"), "hosts": pick("a", "b'c"), "any": allValues, "key": allValues,
		},
		options: map[string][]string{"any": {"x", "y"}},
		tr:      tr,
	}
	for _, tc := range []struct{ in, want string }{
		{"WHERE h = '$host'", "WHERE h = 'o''brien'"},
		{"WHERE h = '${host}' OR h = '[[host]]'", "WHERE h = 'o''brien' OR h = 'o''brien'"},
		{"WHERE h IN ($hosts)", "WHERE h IN ('a','b''c')"},
		{"WHERE h IN (${hosts:sqlstring}) AND '${hosts:csv}'", "WHERE h IN ('a','b''c') AND 'a,b'c'"},
		{"WHERE h IN ($any)", "WHERE h IN ('x','y')"},
		{"WHERE ',' IN (${key})", "WHERE ',' IN (',')"},
		{"SELECT $__time(t), x FROM y WHERE $__timeFilter( t )",
			`SELECT t AS "time", x FROM y WHERE t BETWEEN '2017-04-21T05:01:17Z' AND '2017-04-21T05:06:17.0000005Z'`},
		{"WHERE t > $__timeFrom() AND t < $__timeTo()", "WHERE t > '2017-04-21T05:01:17Z' AND t < '2017-04-21T05:06:17.0000005Z'"},
	} {
		got, err := s.interpolate(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("interpolate(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"WHERE h = '$nohost'", "${host:json}", "$__timeGroup(t, '5m')", "$__timeFilter()", "${hosts.x}"} {
		if got, err := s.interpolate(bad); err == nil {
			t.Errorf("interpolate(%q) = %q, want an error", bad, got)
		}
	}
}
