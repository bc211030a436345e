// Package setting reports a refused setting by the name the library knows it by (a suite's
// field, an option), its value and what was expected. The command line, and only it, speaks
// of the flag that set it (cmd/cnibench). It depends on nothing.
package setting

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

// Reason is what was expected, or the cause.
func (e *Error) Reason() string {
	if e.Err != nil {
		return e.Err.Error()
	}
	return e.Want
}

// Unwrap returns the cause, if any.
func (e *Error) Unwrap() error { return e.Err }
