package label

import (
	"strings"
	"testing"
)

func TestParseAndSelect(t *testing.T) {
	set, err := Parse([]string{"branch=feature/x", "commit=0123abc", "kernel=6.1.0-28-amd64", "note="})
	if err != nil {
		t.Fatal(err)
	}
	for sel, want := range map[string]bool{
		"":                             true,
		"branch=feature/x":             true,
		"branch==feature/x,commit":     true,
		"branch=main":                  false,
		"branch!=main":                 true,
		"kernel!=6.1.0-28-amd64":       false,
		"!cni":                         true,
		"!commit":                      false,
		"cni":                          false,
		"note=":                        true,
		" branch = feature/x , commit": true,
	} {
		s, err := ParseSelector(sel)
		if err != nil {
			t.Errorf("%q: %v", sel, err)
			continue
		}
		if got := s.Matches(set); got != want {
			t.Errorf("%q matches %v: %v, want %v", sel, set, got, want)
		}
	}
	if got := set.String(); got != "branch=feature/x,commit=0123abc,kernel=6.1.0-28-amd64,note=" {
		t.Errorf("String = %q", got)
	}
}

func TestRefused(t *testing.T) {
	for in, want := range map[string]string{
		"branch":                               "expected key=value",
		"=main":                                `key ""`,
		"-x=1":                                 `key "-x"`,
		"k=a\x01b":                             "printable",
		"k=" + strings.Repeat("x", MaxValue+1): "at most 200",
	} {
		if _, err := Parse([]string{in}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an error with %q", in, err, want)
		}
	}
	if _, err := Parse([]string{"a=1", "a=2"}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("a key twice: %v", err)
	}
	for _, in := range []string{"branch=main,", "!", "a b=c"} {
		if _, err := ParseSelector(in); err == nil {
			t.Errorf("ParseSelector(%q) accepted", in)
		}
	}
}
