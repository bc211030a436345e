package kube

import (
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/testsupport/fuzzcheck"
)

// FuzzParseNodeProbe reads a node probe's output (a host-network pod's sysctls, routes and
// ethtool lines, whatever the node's tools print) into fingerprint facts: every fact is under
// the node's prefix and holds one line.
func FuzzParseNodeProbe(f *testing.F) {
	f.Add(probeOutput)
	f.Add("sysctl\nsysctl  \ndev  x\nfeat uplink driver:\nfeat uplink : on\nrmtu remote_pods\nmtu a b c\n")
	f.Fuzz(func(t *testing.T, out string) {
		var fp map[string]string
		fuzzcheck.Within(t, "parseNodeProbe", func() { fp = parseNodeProbe(out, "node_b") })
		for k, v := range fp {
			if !strings.HasPrefix(k, "node_b_") || strings.ContainsAny(k+v, "\n") {
				t.Fatalf("parseNodeProbe(%q): fact %q = %q", out, k, v)
			}
		}
		fp = map[string]string{}
		fuzzcheck.Within(t, "parseInterfaceFacts", func() { parseInterfaceFacts(out, "client", fp) })
		for k, v := range fp {
			if !strings.HasPrefix(k, "client_") || strings.ContainsAny(k+v, "\n") {
				t.Fatalf("parseInterfaceFacts(%q): fact %q = %q", out, k, v)
			}
		}
	})
}
