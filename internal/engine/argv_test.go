package engine

import (
	"strings"
	"testing"
	"time"
)

// TestArgv is the specification of every command line cnibench runs.
func TestArgv(t *testing.T) {
	d := 10 * time.Second
	cases := []struct {
		engine Engine
		w      Workload
		target string
		server string
		client string
	}{
		{iperf3{}, Workload{Kind: TCPStream, Streams: 1, Duration: d}, "10.244.1.7",
			"iperf3 -s -p 5201",
			"iperf3 -c 10.244.1.7 -p 5201 -t 10 -J --connect-timeout 5000"},
		{iperf3{}, Workload{Kind: TCPStream, Streams: 4, MessageSize: 128 << 10, Duration: d}, "fd00:10:244::7",
			"iperf3 -s -p 5201",
			"iperf3 -c fd00:10:244::7 -p 5201 -t 10 -J --connect-timeout 5000 -P 4 -l 131072"},
		{iperf3{}, Workload{Kind: UDPStream, MessageSize: 1300, Rate: "0.5G", Duration: d}, "iperf.bench.svc.cluster.local",
			"iperf3 -s -p 5201",
			"iperf3 -c iperf.bench.svc.cluster.local -p 5201 -t 10 -J --connect-timeout 5000 -u -b 500M -l 1300"},
		{sockperf{}, Workload{Kind: TCPRR, MessageSize: 64, Duration: d}, "10.244.1.7",
			"sockperf server --tcp -p 5201",
			"sockperf ping-pong --tcp -i 10.244.1.7 -p 5201 -t 10 -m 64 --full-rtt"},
		{cnibench{}, Workload{Kind: TCPCRR, MessageSize: 1, Duration: 5 * time.Second}, "10.244.1.7",
			"cnibench agent echo-server --port 5201 --size 1 --close-after-reply",
			"cnibench agent crr --target 10.244.1.7 --port 5201 --duration 5s --size 1 --server-closes"},
		{cnibench{}, Workload{Kind: TCPRR, MessageSize: 1, Duration: 90 * time.Second}, "fd00::7",
			"cnibench agent echo-server --port 5201 --size 1",
			"cnibench agent rr --target fd00::7 --port 5201 --duration 1m30s --size 1"},
	}
	for _, c := range cases {
		if err := c.w.Validate(); err != nil {
			t.Fatalf("%s: %v", c.w.ID(), err)
		}
		if !c.engine.Supports(c.w) {
			t.Errorf("%s does not support %s", c.engine.Name(), c.w.ID())
		}
		if got := strings.Join(c.engine.ServerArgv(c.w, 5201), " "); got != c.server {
			t.Errorf("%s %s server:\n got  %s\n want %s", c.engine.Name(), c.w.ID(), got, c.server)
		}
		if got := strings.Join(c.engine.ClientArgv(c.w, c.target, 5201), " "); got != c.client {
			t.Errorf("%s %s client:\n got  %s\n want %s", c.engine.Name(), c.w.ID(), got, c.client)
		}
	}
}

// TestArgvAllWorkloads builds argv for a grid of valid workloads with the engine For
// picks: every argv starts with the tool, has no empty element, and carries the port
// and target.
func TestArgvAllWorkloads(t *testing.T) {
	var ws []Workload
	for _, s := range []int{1, 2, 128} {
		for _, size := range []int{0, 1, 1300, 1 << 20} {
			ws = append(ws, Workload{Kind: TCPStream, Streams: s, MessageSize: size, Duration: time.Second})
		}
	}
	for _, rate := range []string{"1K", "100M", "2.5G"} {
		ws = append(ws, Workload{Kind: UDPStream, MessageSize: 1300, Rate: rate, Duration: time.Minute})
	}
	for _, size := range []int{1, 13, 14, 1024, 65507} {
		ws = append(ws, Workload{Kind: TCPRR, MessageSize: size, Duration: 2 * time.Second},
			Workload{Kind: TCPCRR, MessageSize: size, Duration: 2 * time.Second})
	}
	for _, w := range ws {
		e, err := For(w)
		if err != nil {
			t.Fatalf("For(%s): %v", w.ID(), err)
		}
		for _, argv := range [][]string{e.ServerArgv(w, 40000), e.ClientArgv(w, "10.0.0.1", 40000)} {
			joined := strings.Join(argv, " ")
			if argv[0] != e.Name() {
				t.Errorf("%s: argv %q does not start with %s", w.ID(), joined, e.Name())
			}
			if !strings.Contains(joined, " 40000") {
				t.Errorf("%s: argv %q lacks the port", w.ID(), joined)
			}
			for _, a := range argv {
				if a == "" {
					t.Errorf("%s: argv %q has an empty element", w.ID(), joined)
				}
			}
		}
		if c := strings.Join(e.ClientArgv(w, "10.0.0.1", 40000), " "); !strings.Contains(c, " 10.0.0.1 ") {
			t.Errorf("%s: client argv %q lacks the target", w.ID(), c)
		}
	}
}
