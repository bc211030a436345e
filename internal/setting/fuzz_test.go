package setting

import (
	"strings"
	"testing"
)

// FuzzField reads the setting names errors carry (targets[0].local.proxyMode, or whatever a
// suite's keys make of them): Field drops every complete index and keeps the rest.
func FuzzField(f *testing.F) {
	for _, s := range []string{"targets[0].local.proxyMode", "paths[2]", "a[", "a]b[", "[[0]]", "x[1][2].y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		e := &Error{Name: name, Want: "expected something"}
		field := e.Field()
		if len(field) > len(name) {
			t.Fatalf("Field(%q) = %q, longer than the name", name, field)
		}
		if strings.Contains(field, "[") && strings.Contains(field[strings.Index(field, "["):], "]") {
			t.Fatalf("Field(%q) = %q keeps an index", name, field)
		}
		if !strings.HasPrefix(e.Error(), name+": ") || !strings.HasPrefix(e.Named("--x"), "--x: ") {
			t.Fatalf("Error %q / Named %q do not lead with the setting", e.Error(), e.Named("--x"))
		}
	})
}
