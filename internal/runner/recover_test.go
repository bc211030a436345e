package runner

import (
	"testing"

	"github.com/cnibench/cnibench/internal/record"
)

// TestLostLineSaysWhatBecameOfTheSample holds the line a run prints and notes for a sample that
// lost an attempt to the cluster: the cell, every cause, and whether a retry measured it.
func TestLostLineSaysWhatBecameOfTheSample(t *testing.T) {
	s := record.Sample{Target: "remote", Path: "cross-node", Workload: "tcp-rr/64B", Pairs: 1}
	pod := "pod cnibench-server-b-0 (server-b) deleted mid-sample, made again in 2.9s"
	api := "the API server at https://10.200.0.1:6443 stopped answering; it answered again 13s after the attempt failed"
	for _, c := range []struct {
		err      string
		attempts int
		causes   []string
		want     string
	}{
		{"", 2, []string{pod}, "1 sample of tcp-rr/64B cross-node on remote lost: " + pod + "; retried"},
		{"x", 3, []string{api, pod}, "1 sample of tcp-rr/64B cross-node on remote lost: " + api + "; " + pod + "; retried, and stored as failed"},
		{"x", 1, []string{pod}, "1 sample of tcp-rr/64B cross-node on remote lost: " + pod + "; stored as failed"},
	} {
		s.Error = c.err
		if got := lostLine(s, c.causes, c.attempts); got != c.want {
			t.Errorf("got  %s\nwant %s", got, c.want)
		}
	}
	s.Pairs, s.Error = 10, ""
	if got := lostLine(s, []string{pod}, 2); got != "1 sample of tcp-rr/64B x10 cross-node on remote lost: "+pod+"; retried" {
		t.Errorf("ten pairs: %s", got)
	}
}
