package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/report"
)

// TestFlameGraphRefusalNamesFlags checks that the command line turns the library's refused
// flame graph into the flags that pick each profiled cell, and leaves other errors alone.
func TestFlameGraphRefusalNamesFlags(t *testing.T) {
	cell := report.FlameGraphCell{Target: "a", Path: "cross-node", Workload: "tcp-stream/1", Pairs: 1}
	err := flameGraphFlags(&report.NoProfileError{Run: "r1", Want: report.FlameGraphCell{Target: "b", Pairs: 1}, Have: []report.FlameGraphCell{cell}})
	want := `--target "a" --path "cross-node" --workload "tcp-stream/1" --pairs 1`
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `no profile of --target "b"`) {
		t.Errorf("err = %v, want the cells as flags", err)
	}
	if err := flameGraphFlags(&report.NoProfileError{Run: "r2"}); err == nil || !strings.Contains(err.Error(), "run with --profile") {
		t.Errorf("no profiles: %v", err)
	}
	other := errors.New("disk full")
	if err := flameGraphFlags(other); err != other {
		t.Errorf("other error became %v", err)
	}
}
