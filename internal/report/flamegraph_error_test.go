package report

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/analysis"
	"github.com/cnibench/cnibench/internal/record"
)

// TestFlameGraphOfAnotherCellNamesTheProfiledOnes checks the refusal of a flame graph of a cell
// without a profile: typed, with the cell asked for (pairs 0 read as 1) and those the run has,
// and no flag in its text (the command line adds them).
func TestFlameGraphOfAnotherCellNamesTheProfiledOnes(t *testing.T) {
	d := Document{Run: record.Run{ID: "r1"}, Profiles: []analysis.ProfileCell{
		{Cell: record.Cell{Target: "a", Path: "cross-node", Workload: "tcp-stream/1", Pairs: 1}},
	}}
	err := WriteFlameGraphOf(io.Discard, d, FlameGraphOptions{Target: "b", Path: "cross-node", Workload: "tcp-stream/1"})
	var np *NoProfileError
	if !errors.As(err, &np) {
		t.Fatalf("err = %v, want a *NoProfileError", err)
	}
	want := FlameGraphCell{Target: "b", Path: "cross-node", Workload: "tcp-stream/1", Pairs: 1}
	if np.Run != "r1" || np.Want != want || len(np.Have) != 1 || np.Have[0].Target != "a" {
		t.Errorf("error = %+v", np)
	}
	if strings.Contains(err.Error(), "--") {
		t.Errorf("the library's text names a flag: %v", err)
	}
	err = WriteFlameGraphOf(io.Discard, Document{Run: record.Run{ID: "r2"}}, FlameGraphOptions{})
	if !errors.As(err, &np) || len(np.Have) != 0 || !strings.Contains(err.Error(), "no CPU profiles") {
		t.Errorf("a run without profiles: %v", err)
	}
}
