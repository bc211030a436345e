package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestRBACCommand(t *testing.T) {
	run := func(args ...string) (string, error) {
		cmd := newRBACCommand()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(args)
		err := cmd.Execute()
		return out.String(), err
	}
	out, err := run("--namespace", "bench", "--service-account", "bench/runner")
	if err != nil || strings.Count(out, "\n---\n") != 3 || !strings.Contains(out, "kind: ServiceAccount") || !strings.Contains(out, "namespace: bench") {
		t.Errorf("rbac for a ServiceAccount: %v\n%s", err, out)
	}
	if _, err := run("--namespace", "bench", "--service-account", "runner"); err == nil || !strings.Contains(err.Error(), "--service-account \"runner\": expected NAMESPACE/NAME") {
		t.Errorf("a ServiceAccount without its namespace: %v", err)
	}
	if _, err := run("--namespace", "bench"); err == nil || !strings.Contains(err.Error(), "service-account") {
		t.Errorf("no subject: %v", err)
	}
	out, err = run("--namespace", "bench", "--user", "alice", "--secondary-network", "macvlan")
	if err != nil || !strings.Contains(out, "- network-attachment-definitions") || !strings.Contains(out, "- macvlan") {
		t.Errorf("rbac with a secondary network: %v\n%s", err, out)
	}
	if _, err := run("--user", "alice", "--secondary-network", "macvlan"); err == nil || !strings.Contains(err.Error(), "expected NAMESPACE/NAME") {
		t.Errorf("a secondary network's name alone without --namespace: %v", err)
	}
}
