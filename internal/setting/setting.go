// Package setting reports a refused setting by the name the library knows it by (a suite's
// field, an option), its value and what was expected. The command line, and only it, speaks
// of the flag that set it (cmd/cnibench). It depends on nothing but the standard library.
package setting

import "strings"

// Error is a setting refused.
type Error struct {
	Name  string // e.g. "nodes", "proxyMode", "baseline"
	Value string // as given, formatted: quoted when a string
	// Want says what was expected, or why the value cannot be; Err is the cause instead,
	// where one is returned by something else (an unreadable file, a refused address).
	Want string
	Err  error
}

// Error reads "nodes: 0: expected a whole number from 1 to 50", as a suite names its fields,
// or without a value "faithful: the suite names no study durations".
func (e *Error) Error() string {
	if e.Value == "" {
		return e.Name + ": " + e.Reason()
	}
	return e.Name + ": " + e.Value + ": " + e.Reason()
}

// Named reads as Error with the setting called name, as a flag is written:
// "--nodes 0: expected ...", "--faithful: the suite names ...".
func (e *Error) Named(name string) string {
	if e.Value == "" {
		return name + ": " + e.Reason()
	}
	return name + " " + e.Value + ": " + e.Reason()
}

// Field is the name without its list indices: targets.local.proxyMode for
// targets[0].local.proxyMode, paths for paths[2]. It is what a table of the settings'
// sources is keyed by, whichever entry of a list was refused.
func (e *Error) Field() string {
	var b strings.Builder
	for rest := e.Name; rest != ""; {
		open := strings.IndexByte(rest, '[')
		if open < 0 {
			b.WriteString(rest)
			break
		}
		b.WriteString(rest[:open])
		end := strings.IndexByte(rest[open:], ']')
		if end < 0 {
			b.WriteString(rest[open:])
			break
		}
		rest = rest[open+end+1:]
	}
	return b.String()
}

// Reason is what was expected, or the cause.
func (e *Error) Reason() string {
	if e.Err != nil {
		return e.Err.Error()
	}
	return e.Want
}

// Unwrap returns the cause, if any.
func (e *Error) Unwrap() error { return e.Err }
