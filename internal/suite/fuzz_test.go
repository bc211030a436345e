package suite

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/setting"
	"github.com/cnibench/cnibench/internal/testsupport/fuzzcheck"
)

// addExamples seeds f with the suite files of examples/.
func addExamples(f *testing.F) {
	f.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "examples", "*.yaml"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no example suites: %v", err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// checkSuiteError fails t unless err names what it refused: every error of a refused suite is
// a *setting.Error named by its field's path, and an undecodable file's error names the line
// or the field.
func checkSuiteError(t *testing.T, err error) {
	t.Helper()
	var invalid *InvalidError
	var named *setting.Error
	switch {
	case errors.As(err, &invalid):
	case errors.As(err, &named) && named.Name != "":
		return
	default:
		fuzzcheck.Names(t, err, "line ", "field ", "top level")
		return
	}
	var errs []error
	if joined, ok := invalid.Err.(interface{ Unwrap() []error }); ok {
		errs = joined.Unwrap()
	} else {
		errs = []error{invalid.Err}
	}
	for _, e := range errs {
		var se *setting.Error
		if !errors.As(e, &se) || se.Name == "" {
			t.Fatalf("suite error %q is not named by its field (a *setting.Error)", e)
		}
	}
}

// checkSuite parses data in bounded time and checks the error, or that the suite it accepted
// is stored (YAML) as a file that parses back to the same suite: a stored run can be re-run.
func checkSuite(t *testing.T, data []byte) {
	var s Suite
	var err error
	fuzzcheck.Within(t, "suite Parse", func() { s, err = Parse(data) })
	if err != nil {
		checkSuiteError(t, err)
		return
	}
	checkFinite(t, s)
	stored := s.YAML()
	again, err := Parse([]byte(stored))
	if err != nil {
		t.Fatalf("the stored YAML of an accepted suite does not parse: %v\n%s", err, stored)
	}
	if again.YAML() != stored {
		t.Fatalf("the stored YAML changed on a round trip:\n%s\n---\n%s", stored, again.YAML())
	}
}

// checkFinite fails t when an accepted suite holds a fraction that is not a number.
func checkFinite(t *testing.T, s Suite) {
	t.Helper()
	fuzzcheck.Finite(t, "suite", map[string]float64{"precision": float64(s.Precision), "margin": float64(s.Margin)})
}

// FuzzParse reads suite files.
func FuzzParse(f *testing.F) {
	addExamples(f)
	for _, s := range []string{"bogus: 1\n", "duration: soon\n", "precision: 5%\nbudget: 10m\n", "warmup: off\n",
		"workloads: [{kind: udp-stream, size: 1300, rate: 1G, search: true, maxLoss: 0.1}]",
		"targets: [{name: a, local: {nodes: 1}}]\npaths: [same-node]", "apiVersion: cnibench/v2\nx: 1\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(checkSuite)
}

// referenceBase is a suite whose matrix a fuzzed reference block points into.
const referenceBase = `targets:
  - {name: flannel, local: {cluster: fl, datapath: flannel-vxlan}}
  - {name: cilium, local: {cluster: ci, datapath: cilium-vxlan}}
paths: [same-node, cross-node]
workloads:
  - {kind: tcp-stream, streams: 1}
  - {kind: tcp-rr, size: 1}
`

// FuzzReference reads the reference: block of a suite (a published study's figures and
// durations); it must refuse a figure outside the matrix by naming it, and Faithful must take
// what it accepted.
func FuzzReference(f *testing.F) {
	f.Add("study: x\ndurations: {tcp-stream: 30s, tcp-rr: 75s}\nfigures:\n  - {target: cilium, against: flannel, path: cross-node, workload: tcp-stream/1, metric: throughput_gbps, value: 1.416}\n")
	f.Add("study: x\nfigures:\n  - {target: flannel, path: same-node, workload: tcp-rr/1B, metric: latency_p99_us, value: 30, pairs: 2, perPair: true}\n")
	f.Add("figures:\n  - {target: nowhere, path: sideways, workload: ping, metric: speed}\ndurations: {ping: soon}\n")
	f.Fuzz(func(t *testing.T, block string) {
		var b strings.Builder
		b.WriteString(referenceBase + "reference:\n")
		for _, line := range strings.Split(block, "\n") {
			b.WriteString("  " + line + "\n")
		}
		var s Suite
		var err error
		fuzzcheck.Within(t, "suite Parse", func() { s, err = Parse([]byte(b.String())) })
		if err != nil {
			checkSuiteError(t, err)
			return
		}
		checkSuite(t, []byte(b.String()))
		if s.Reference != nil && len(s.Reference.Durations) > 0 {
			if _, err := s.Faithful(); err != nil {
				t.Fatalf("Faithful of an accepted reference: %v", err)
			}
		}
	})
}

// FuzzOverrides applies the command line's settings to the default suite, as `run` does: the
// lists its flags read, the numbers it passes through. Every refusal names the setting.
func FuzzOverrides(f *testing.F) {
	f.Add("1,10,40", "none,allow+100", "same-node,cross-node", "cilium-vxlan", "runc", "5%", 3, int64(5))
	f.Add("0", "allow+1,allow+1", "", "", "", "off", -1, int64(-1))
	f.Add("", "", "", "", "", "NaN", 0, int64(0))
	f.Add(" 2 ,x", "deny", "localhost", "bridge,bridge", "gvisor,kata", "150%", 1001, int64(1<<40))
	f.Fuzz(func(t *testing.T, pairs, policies, paths, datapaths, runtimes, precision string, repetitions int, seconds int64) {
		var o Overrides
		var s Suite
		var err error
		fuzzcheck.Within(t, "overrides", func() {
			if pairs != "" {
				if o.Pairs, err = ParsePairs(pairs); err != nil {
					return
				}
			}
			if policies != "" {
				if o.NetworkPolicies, err = ParseNetworkPolicies(policies); err != nil {
					return
				}
			}
			if err = o.SetPrecision(precision); err != nil {
				return
			}
			o.Paths, o.Datapaths, o.Runtimes = list(paths), list(datapaths), list(runtimes)
			o.Repetitions, o.Duration = repetitions, time.Duration(seconds)*time.Second
			s, err = Resolve("", o)
		})
		if err != nil {
			checkSuiteError(t, err)
			return
		}
		checkFinite(t, s)
		// The effective suite is stored with the run, to be re-run exactly.
		again, err := Parse([]byte(s.YAML()))
		if err != nil || again.YAML() != s.YAML() {
			t.Fatalf("the stored YAML of a resolved suite does not read back: %v\n%s", err, s.YAML())
		}
	})
}

// list splits a comma-separated flag value, as the command line's string slices do.
func list(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
