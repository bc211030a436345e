package label

import (
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/testsupport/fuzzcheck"
)

// FuzzParseSelector reads run selectors (-l): an error names the selector, and an accepted one
// is written back (String) as a selector that reads the same.
func FuzzParseSelector(f *testing.F) {
	for _, s := range []string{"", "branch=main", "branch==main,!wip", "ci, pr!=12", "example.com/team=net", "a=b=c", "=x", "k=a,b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var sel Selector
		var err error
		fuzzcheck.Within(t, "ParseSelector", func() { sel, err = ParseSelector(s) })
		if err != nil {
			fuzzcheck.Names(t, err, "selector")
			return
		}
		back, err := ParseSelector(sel.String())
		if err != nil || back.String() != sel.String() {
			t.Fatalf("ParseSelector(%q).String() = %q, which reads back as %q, %v", s, sel.String(), back.String(), err)
		}
	})
}

// FuzzParse reads run labels (--label key=value, one per line here): an error names the pair,
// and the set's String selects the set itself, as its documentation promises.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"branch=main\ncommit=abc123", "k=\nk2=v", "k=x!=y", "k= v ", "k==v", "a=b\na=c", "noequals"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, pairs string) {
		var set Set
		var err error
		fuzzcheck.Within(t, "Parse", func() { set, err = Parse(strings.Split(pairs, "\n")) })
		if err != nil {
			fuzzcheck.Names(t, err, "key", "value", "expected key=value")
			return
		}
		sel, err := ParseSelector(set.String())
		if err != nil || !sel.Matches(set) {
			t.Fatalf("labels %v: their String %q does not select them: %v", set, set.String(), err)
		}
	})
}
