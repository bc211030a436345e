// Package label reads a run's labels (key=value pairs a CI stores with a run: commit, branch,
// CNI version, kernel) and the selectors that pick runs by them. Keys follow Kubernetes' label
// keys; values are freer than Kubernetes' (a branch is "feature/x", a kernel "6.1.0-28-amd64"),
// so Kubernetes' own selector parser, which refuses those values, is not used.
package label

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Set is a run's labels.
type Set map[string]string

// keyPattern is a label key: Kubernetes' qualified name with an optional DNS prefix.
var keyPattern = regexp.MustCompile(`^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)

// MaxValue is the longest value, in bytes: a commit hash, a version, a branch fit easily.
const MaxValue = 200

// CheckKey says what is wrong with a label key, nil when nothing is.
func CheckKey(k string) error {
	if len(k) > 253 || !keyPattern.MatchString(k) {
		return fmt.Errorf("key %q: expected letters, digits, '-', '_' and '.', starting and ending with a letter or digit, optionally prefixed by a DNS name and '/'", k)
	}
	return nil
}

// CheckValue says what is wrong with a label value, nil when nothing is: printable, without
// commas (they separate a selector's terms), at most MaxValue bytes; empty is allowed.
func CheckValue(v string) error {
	if len(v) > MaxValue {
		return fmt.Errorf("value of %d bytes: expected at most %d", len(v), MaxValue)
	}
	for i, r := range v {
		if r == ',' || r < 0x20 || r == 0x7f || r == '\uFFFD' {
			return fmt.Errorf("value %q: character %q at byte %d: expected printable text without commas", v, r, i)
		}
	}
	return nil
}

// ParsePair reads one "key=value". Blanks around the value are dropped, as a selector drops
// them: "k= v" is the label a selector "k=v" picks.
func ParsePair(s string) (key, value string, err error) {
	k, v, ok := strings.Cut(s, "=")
	v = strings.TrimSpace(v)
	if !ok {
		return "", "", fmt.Errorf("%q: expected key=value, e.g. branch=main", s)
	}
	if err := CheckKey(k); err != nil {
		return "", "", err
	}
	if err := CheckValue(v); err != nil {
		return "", "", fmt.Errorf("%s: %w", k, err)
	}
	return k, v, nil
}

// Parse reads "key=value" pairs into a set; a key given twice is an error.
func Parse(pairs []string) (Set, error) {
	out := Set{}
	for _, p := range pairs {
		k, v, err := ParsePair(p)
		if err != nil {
			return nil, err
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("%q: key %s given twice", p, k)
		}
		out[k] = v
	}
	return out, nil
}

// String writes the set as "k1=v1,k2=v2", keys sorted: what a selector reads back.
func (s Set) String() string {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + equals(s[k]) + s[k]
	}
	return strings.Join(parts, ",")
}

// term is one requirement of a selector.
type term struct {
	key, value string
	op         string // "=", "!=", "exists" or "!exists"
}

// Selector picks runs by their labels: every term must hold. The zero Selector selects all.
type Selector struct{ terms []term }

// ParseSelector reads comma-separated terms, as kubectl's -l does: key=value (also key==value),
// key!=value, key (the key is set) and !key (it is not). "" selects everything.
func ParseSelector(s string) (Selector, error) {
	var sel Selector
	if strings.TrimSpace(s) == "" {
		return sel, nil
	}
	for _, raw := range strings.Split(s, ",") {
		t, err := parseTerm(strings.TrimSpace(raw))
		if err != nil {
			return Selector{}, fmt.Errorf("selector %q: %w", s, err)
		}
		sel.terms = append(sel.terms, t)
	}
	return sel, nil
}

func parseTerm(s string) (term, error) {
	var t term
	// The operator is the first "=" (no key holds one) with the "!" before it or the "=" after
	// it: a value may hold "!=" or "==" itself.
	eq := strings.IndexByte(s, '=')
	switch {
	case eq > 0 && s[eq-1] == '!':
		t.key, t.value, t.op = s[:eq-1], s[eq+1:], "!="
	case eq >= 0 && strings.HasPrefix(s[eq:], "=="):
		t.key, t.value, t.op = s[:eq], s[eq+2:], "="
	case eq >= 0:
		t.key, t.value, t.op = s[:eq], s[eq+1:], "="
	case strings.HasPrefix(s, "!"):
		t.key, t.op = strings.TrimPrefix(s, "!"), "!exists"
	default:
		t.key, t.op = s, "exists"
	}
	t.key, t.value = strings.TrimSpace(t.key), strings.TrimSpace(t.value)
	if err := CheckKey(t.key); err != nil {
		return term{}, err
	}
	if err := CheckValue(t.value); err != nil {
		return term{}, err
	}
	return t, nil
}

// Matches says whether a run with these labels is selected.
func (sel Selector) Matches(s Set) bool {
	for _, t := range sel.terms {
		v, has := s[t.key]
		ok := false
		switch t.op {
		case "=":
			ok = has && v == t.value
		case "!=":
			ok = !has || v != t.value
		case "exists":
			ok = has
		case "!exists":
			ok = !has
		}
		if !ok {
			return false
		}
	}
	return true
}

// Empty says whether the selector selects everything.
func (sel Selector) Empty() bool { return len(sel.terms) == 0 }

// String writes the selector as ParseSelector reads it.
func (sel Selector) String() string {
	parts := make([]string, len(sel.terms))
	for i, t := range sel.terms {
		switch t.op {
		case "exists":
			parts[i] = t.key
		case "!exists":
			parts[i] = "!" + t.key
		case "=":
			parts[i] = t.key + equals(t.value) + t.value
		default:
			parts[i] = t.key + t.op + t.value
		}
	}
	return strings.Join(parts, ",")
}

// equals is the operator that writes key=value so that a selector reads value back: "==" for
// a value that starts with "=" itself.
func equals(value string) string {
	if strings.HasPrefix(value, "=") {
		return "=="
	}
	return "="
}
