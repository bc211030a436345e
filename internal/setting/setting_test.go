package setting

import (
	"errors"
	"io/fs"
	"testing"
)

func TestErrorReadsAsASuiteField(t *testing.T) {
	if got := (&Error{Name: "nodes", Value: "0", Want: "expected a whole number from 1 to 50"}).Error(); got != "nodes: 0: expected a whole number from 1 to 50" {
		t.Errorf("got %q", got)
	}
	if got := (&Error{Name: "faithful", Want: "no durations"}).Named("--faithful"); got != "--faithful: no durations" {
		t.Errorf("without a value: %q", got)
	}
	e := &Error{Name: "baseline", Value: "abc", Err: fs.ErrNotExist}
	if e.Error() != "baseline: abc: file does not exist" || !errors.Is(e, fs.ErrNotExist) {
		t.Errorf("with a cause: %q", e.Error())
	}
}

func TestFieldDropsListIndices(t *testing.T) {
	for name, want := range map[string]string{
		"targets[0].local.proxyMode": "targets.local.proxyMode", "paths[12]": "paths", "repetitions": "repetitions",
		"targets[1].runtimes[0]": "targets.runtimes", "odd[": "odd[",
	} {
		if got := (&Error{Name: name}).Field(); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
}
