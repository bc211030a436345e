//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/cluster"
)

// TestCreateInterruptedLeavesNothing sends SIGINT to create at several points of its progress:
// the CLI must remove what it made and exit non-zero, leaving the host as it was.
func TestCreateInterruptedLeavesNothing(t *testing.T) {
	const name = "cnbint"
	for _, at := range []string{
		"issuing certificates",
		"creating namespaces and underlay",
		"waiting for the API server",
		"starting nodes",
		"waiting for nodes to be Ready",
		"waiting for CoreDNS",
	} {
		t.Run(at, func(t *testing.T) {
			before := snapshot(t)
			defer forceDelete(name)
			s := startCLI(t, "cluster", "create", "--name", name)
			if !s.waitLine(t, at, 3*time.Minute) {
				t.Fatalf("create ended before %q:\n%s", at, s.output())
			}
			if err := s.cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			err := s.wait(t, 2*time.Minute)
			if err == nil {
				t.Fatalf("create exited 0 after SIGINT:\n%s", s.output())
			}
			if !strings.Contains(s.output(), "removing what was created") {
				t.Errorf("no cleanup reported:\n%s", s.output())
			}
			if _, err := os.Stat(cluster.DefaultLayout().Dir(name)); err == nil {
				t.Errorf("state directory of %s survived; create's output:\n%s", name, s.output())
			}
			if strings.Contains(s.output(), "logs of the failed cluster") {
				t.Errorf("an interrupted create kept its logs:\n%s", s.output())
			}
			assertClean(t, before)
		})
	}
}

// TestCreateKilledThenDeleteLeavesNothing kills the CLI with SIGKILL mid-create (it can clean
// nothing itself) and checks that delete then removes everything.
func TestCreateKilledThenDeleteLeavesNothing(t *testing.T) {
	const name = "cnbkill"
	for _, at := range []string{"waiting for the API server", "waiting for nodes to be Ready", "waiting for CoreDNS"} {
		t.Run(at, func(t *testing.T) {
			before := snapshot(t)
			defer forceDelete(name)
			s := startCLI(t, "cluster", "create", "--name", name)
			if !s.waitLine(t, at, 3*time.Minute) {
				t.Fatalf("create ended before %q:\n%s", at, s.output())
			}
			if err := s.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = s.wait(t, time.Minute)
			// The daemons it started outlive it: that is what delete is for.
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			if out, err := cli(ctx, "cluster", "delete", "--name", name); err != nil {
				t.Fatalf("delete after SIGKILL: %v\n%s", err, out)
			}
			assertClean(t, before)
		})
	}
}

// TestCreateRefusesBadInput checks that each bad input gets one clear error naming the flag,
// and that a refused create leaves nothing.
func TestCreateRefusesBadInput(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	before := snapshot(t)
	cases := []struct {
		args []string
		env  []string
		want string
	}{
		{args: []string{"--nodes", "0"}, want: "--nodes 0: expected a whole number from 1 to"},
		{args: []string{"--datapath", "calico"}, want: `--datapath "calico": expected one of bridge`},
		{args: []string{"--proxy-mode", "ipvs"}, want: `--proxy-mode "ipvs": expected nftables or iptables`},
		{args: []string{"--name", "Bad_Name"}, want: `--name "Bad_Name": expected 1-11 characters`},
		{args: []string{"--subnet", "10.1.0.0/16"}, want: `--subnet "10.1.0.0/16": expected a /16 from 10.200.0.0/16`},
		{args: []string{"--name", "cnbdeps"}, env: []string{"CNIBENCH_CACHE=" + t.TempDir()}, want: "run scripts/setup.sh"},
		{args: []string{"--kubernetes-version", "v1.99.0"}, want: `--kubernetes-version "v1.99.0": expected one of v1.37.2`},
	}
	for _, c := range cases {
		cmd := append([]string{"cluster", "create"}, c.args...)
		out, err := cliEnv(ctx, c.env, cmd...)
		if err == nil || !strings.Contains(out, c.want) {
			t.Errorf("create %v: err=%v, want an error containing %q, got:\n%s", c.args, err, c.want, out)
		}
		if n := strings.Count(out, "error:"); n != 1 {
			t.Errorf("create %v: expected exactly one error, got:\n%s", c.args, out)
		}
	}
	t.Run("subnet colliding with a host route", func(t *testing.T) {
		// An unreachable route is the one kind of test route that can never send a packet.
		if _, err := runCmd(ctx, "ip", "route", "add", "unreachable", "10.230.0.0/16"); err != nil {
			t.Fatal(err)
		}
		defer runCmd(context.Background(), "ip", "route", "del", "unreachable", "10.230.0.0/16") //nolint:errcheck
		out, err := cli(ctx, "cluster", "create", "--name", "cnbroute", "--subnet", "10.230.0.0/16")
		if err == nil || !strings.Contains(out, "--subnet 10.230.0.0/16: collides with the host route 10.230.0.0/16") {
			t.Errorf("err=%v, output:\n%s", err, out)
		}
	})
	assertClean(t, before)
}

// TestFailedCreateExplainsAndLeavesNothing makes create fail with a wait of one millisecond:
// the nodes-Ready and CoreDNS waits each look once, and CoreDNS, created a moment before,
// cannot be available yet (a wait of one second sometimes sufficed for both on a warm host).
// The error must carry the log lines that explain it, the logs must be kept, and the host must
// be as before.
func TestFailedCreateExplainsAndLeavesNothing(t *testing.T) {
	const name = "cnbfail"
	before := snapshot(t)
	defer forceDelete(name)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := cli(ctx, "cluster", "create", "--name", name, "--wait", "1ms")
	if err == nil {
		t.Fatalf("create with --wait 1s succeeded:\n%s", out)
	}
	// Either the nodes or CoreDNS time out; either way the kubelet log says why.
	for _, want := range []string{"timed out after 1ms", "-kubelet.log:", "logs of the failed cluster: "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if i := strings.Index(out, "logs of the failed cluster: "); i >= 0 {
		dir := strings.TrimSpace(strings.SplitN(out[i+len("logs of the failed cluster: "):], "\n", 2)[0])
		if _, err := os.Stat(filepath.Join(dir, "kube-apiserver.log")); err != nil {
			t.Errorf("kept logs: %v", err)
		}
		os.RemoveAll(dir)
	}
	assertClean(t, before)
}

// TestRunInterruptedWhileCreatingClusters interrupts a run while it creates its two absent
// clusters at once: each create's progress carries its cluster's name, and after SIGINT both
// creates undo what they made (or the run deletes a cluster that was ready), leaving the host
// as it was.
func TestRunInterruptedWhileCreatingClusters(t *testing.T) {
	names := []string{"cnbcra", "cnbcrb"}
	before := snapshot(t)
	for _, n := range names {
		defer forceDelete(n)
	}
	dir := t.TempDir()
	suiteFile := filepath.Join(dir, "two.yaml")
	text := "targets:\n"
	for _, n := range names {
		text += "  - {name: " + n + ", local: {cluster: " + n + "}}\n"
	}
	text += "paths: [cross-node]\nworkloads: [{kind: tcp-rr, size: 64}]\nrepetitions: 2\nduration: 1s\nwarmup: off\n"
	if err := os.WriteFile(suiteFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startCLI(t, "run", "-f", suiteFile, "--store", filepath.Join(dir, "results.db"))
	if !s.waitLine(t, "waiting for nodes to be Ready", 3*time.Minute) {
		t.Fatalf("run ended before its clusters' nodes started:\n%s", s.output())
	}
	if err := s.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := s.wait(t, 3*time.Minute); err == nil {
		t.Fatalf("run exited 0 after SIGINT:\n%s", s.output())
	}
	t.Logf("the run's output:\n%s", s.output())
	for _, n := range names {
		if !strings.Contains(s.output(), "    "+n+": ") {
			t.Errorf("no progress line of %s's create carries its name:\n%s", n, s.output())
		}
		if _, err := os.Stat(cluster.DefaultLayout().Dir(n)); err == nil {
			t.Errorf("state directory of %s survived; the run's output:\n%s", n, s.output())
		}
	}
	assertClean(t, before)
}
