package main

import (
	"slices"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/agentcmd"
	"github.com/cnibench/cnibench/internal/engine"
)

// TestAgentArgvParses parses every command line cnibench execs the agent with, built as its
// callers build them, with the agent's own cobra commands: a flag renamed or removed on one
// side, or a required one missing, fails here rather than in a run.
func TestAgentArgvParses(t *testing.T) {
	three := 3
	cmds := []agentcmd.Command{
		agentcmd.StatCmd{},
		agentcmd.ProbeCmd{Target: "10.1.2.3:5201", Timeout: time.Second},
		agentcmd.ProbeCmd{Target: "[fd00::1]:5201", Until: agentcmd.ProbeTimeout, Interval: 10 * time.Millisecond,
			Timeout: 250 * time.Millisecond, Confirm: &three, MaxWait: time.Minute},
		agentcmd.RunCmd{Barrier: true, KeepAwake: 4, RTTLog: "/tmp/rtt.csv", Command: []string{"sockperf", "ping-pong", "-t", "1"}},
		agentcmd.RunCmd{Barrier: true, Command: agentcmd.ProbeCmd{Target: "10.1.2.3:80", Until: agentcmd.ProbeOpen}.Argv()},
		agentcmd.HTTPGetCmd{URL: "http://10.1.2.3:8080/", Host: "split.example"},
		agentcmd.ExternalServersCmd{Server: "10.9.0.2:7900", Token: "t0k", Start: []string{"tcp-stream/1=0", "tcp-rr/64B=0"}},
		agentcmd.ExternalServersCmd{Server: "10.9.0.2:7900", Token: "t0k", Stop: true},
		agentcmd.WhoAmICmd{Server: "10.9.0.2:7900", Token: "t0k"},
		agentcmd.WhoAmICmd{Server: "10.9.0.2:7900", Token: "t0k", CA: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"},
		agentcmd.ExternalServersCmd{Server: "10.9.0.2:7900", Token: "t0k", CA: "PEM", Stop: true},
		agentcmd.NameServerCmd{Port: 8080},
		agentcmd.ServeCmd{Self: "/usr/local/bin/cnibench", Listen: "0.0.0.0:7900", TokenFile: "/var/lib/cnibench/clusters/a/external-token"},
		agentcmd.ServeCmd{Self: "/usr/local/bin/cnibench", Listen: "0.0.0.0:7900", TokenFile: "/var/lib/cnibench/clusters/a/external-token",
			TLSCert: "/var/lib/cnibench/clusters/a/pki/external-agent.crt", TLSKey: "/var/lib/cnibench/clusters/a/pki/external-agent.key"},
	}
	for _, argv := range cmdsArgv(cmds) {
		parseAgentArgv(t, argv)
	}
	// The engines that run the agent, as the runner asks them.
	cnb, err := engine.ByName(engine.NameCnibench)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{engine.TCPRR, engine.TCPCRR} {
		w := engine.Workload{Kind: kind, MessageSize: 64, Duration: 5 * time.Second}
		parseAgentArgv(t, cnb.ServerArgv(w, 5201))
		parseAgentArgv(t, cnb.ClientArgv(w, "10.1.2.3", 5201))
	}
	k6, err := engine.ByName(engine.NameK6)
	if err != nil {
		t.Fatal(err)
	}
	parseAgentArgv(t, k6.ClientArgv(engine.Workload{Kind: engine.GatewaySplit, Weight: 40, VUs: 10, Duration: 5 * time.Second}, "10.1.2.3", 8080))
}

func cmdsArgv(cmds []agentcmd.Command) [][]string {
	var out [][]string
	for _, c := range cmds {
		out = append(out, c.Argv())
	}
	return out
}

// parseAgentArgv parses one agent command line as `cnibench agent` would, and the agent
// command a `run` wraps.
func parseAgentArgv(t *testing.T, argv []string) {
	t.Helper()
	if len(argv) < 3 || argv[1] != agentcmd.Group {
		t.Errorf("%q: not an agent command line", argv)
		return
	}
	root := newAgentCommand()
	sub, rest, err := root.Find(argv[2:])
	if err != nil || sub == root {
		t.Errorf("%q: no agent subcommand %q: %v", argv, argv[2], err)
		return
	}
	if err := sub.ParseFlags(rest); err != nil {
		t.Errorf("%q: %v", argv, err)
		return
	}
	if err := sub.ValidateRequiredFlags(); err != nil {
		t.Errorf("%q: %v", argv, err)
	}
	args := sub.Flags().Args()
	if sub.Name() == agentcmd.Run {
		if len(args) == 0 {
			t.Errorf("%q: run wraps no command", argv)
		} else if args[0] == agentcmd.Binary {
			parseAgentArgv(t, args)
		}
		return
	}
	if err := sub.ValidateArgs(args); err != nil {
		t.Errorf("%q: %v", argv, err)
	}
	if slices.Contains(argv, "") {
		t.Errorf("%q: an empty argument", argv)
	}
}
