package yamlerr

import (
	"errors"
	"strings"
	"testing"
)

func TestLocate(t *testing.T) {
	cause := errors.New("yaml: a syntax error")
	for in, want := range map[string]string{
		"a: 1\nb: \"open\n":      "line 2: yaml: a syntax error",
		"a: 1\nb: 2\nc: *nope\n": "line 3: yaml: a syntax error",
		"\"":                     "line 1: yaml: a syntax error",
	} {
		if got := Locate([]byte(in), cause); got.Error() != want {
			t.Errorf("Locate(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Locate([]byte("a: 1\n"), cause); got != cause {
		t.Errorf("a document that parses: %v, want the error unchanged", got)
	}
	named := errors.New("yaml: line 4: did not find expected key")
	if got := Locate([]byte("\""), named); got != named || !strings.Contains(got.Error(), "line 4") {
		t.Errorf("an error with a line: %v", got)
	}
}
