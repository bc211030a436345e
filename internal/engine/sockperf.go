package engine

import (
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
)

// Sockperf limits (sockperf 3.7).
const (
	// SockperfMinSize is sockperf's smallest message: it rejects `-m 13` with
	// "'-m' Invalid message size: 13 (min: 14)" (its header takes 14 bytes).
	SockperfMinSize = 14
	// SockperfMaxSize is the largest message the server accepts by default (its -m
	// defaults to 65507); bigger requests make it drop the connection.
	SockperfMaxSize = 65507
)

// sockperf drives sockperf (tested with 3.7, Debian 12) for tcp-rr in ping-pong mode.
//
// The server is `sockperf server --tcp -p PORT`, listening on 0.0.0.0 only: sockperf 3.7
// has no IPv6 support at all, and its client's -i takes IPv4 literals only ("'-i'
// Invalid address: localhost", also for "::1"), hence CheckTarget.
//
// Sockperf exits 0 even on failure (connection refused, invalid option); Parse finds
// failures in the text. Its output carries ANSI colour escapes even when stdout is not
// a terminal.
//
// Measured window: sockperf discards the first 400 ms (warm-up) and the last 50 ms of
// the -t run time, so a sample of Duration d measures d-0.45 s (0.55 s for 1 s, 4.55 s
// for 5 s); Parse divides by the measured window it prints, so rates are unbiased. The
// client's wall time is about Duration + 2.2 s (3.2 s for -t 1, 7.3 s for -t 5).
//
// RTT semantics: without --full-rtt, sockperf reports "latency" = RTT/2 for every
// statistic ("avg-latency=", "Summary: Latency is"); with --full-rtt it reports the full
// round trip ("avg-rtt=", "Summary: Round trip is"). ClientArgv passes --full-rtt; Parse
// accepts both forms and doubles half-RTT values, so metrics are always full RTT, as for
// the cnibench agent.
type sockperf struct{}

// Name implements Engine.
func (sockperf) Name() string { return NameSockperf }

// Supports implements Engine: tcp-rr with messages of SockperfMinSize-SockperfMaxSize bytes.
func (sockperf) Supports(w Workload) bool {
	return w.Kind == TCPRR && w.validateShape() == nil &&
		w.MessageSize >= SockperfMinSize && w.MessageSize <= SockperfMaxSize
}

// ServerArgv implements Engine.
func (sockperf) ServerArgv(_ Workload, port int) []string {
	return []string{"sockperf", "server", "--tcp", "-p", strconv.Itoa(port)}
}

// ClientArgv implements Engine:
//
//	sockperf ping-pong --tcp -i TARGET -p PORT -t SECONDS -m SIZE --full-rtt
//
// TARGET must be an IPv4 address (see CheckTarget): resolve names before calling.
func (sockperf) ClientArgv(w Workload, target string, port int) []string {
	return []string{"sockperf", "ping-pong", "--tcp", "-i", target, "-p", strconv.Itoa(port),
		"-t", strconv.Itoa(wholeSeconds(w)), "-m", strconv.Itoa(w.MessageSize), "--full-rtt"}
}

// CheckTarget implements TargetChecker: sockperf 3.7 takes IPv4 literals only.
func (sockperf) CheckTarget(target string) error {
	addr, err := netip.ParseAddr(target)
	if err != nil || !addr.Is4() {
		return fmt.Errorf("target: sockperf 3.7 expects an IPv4 address (no DNS names, no IPv6), got %q: resolve it first or use the %s engine", target, NameCnibench)
	}
	return nil
}

// sockperfPatterns are the lines Parse reads, once ANSI escapes are removed.
type sockperfPatterns struct {
	ansi, failure, servers, window, mean, observations, percentile *regexp.Regexp
}

// newSockperfPatterns compiles the patterns (a function, not package state).
func newSockperfPatterns() sockperfPatterns {
	return sockperfPatterns{
		ansi: regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]`),
		// "sockperf: ERROR: Can`t connect socket (errno=111 Connection refused)"
		// "sockperf: '-m' Invalid message size: 13 (min: 14)"
		// (an ERROR may follow other text on its line).
		failure: regexp.MustCompile(`(?m)(ERROR: .*|'-[^']*' Invalid .*)$`),
		// "sockperf: ========= Printing statistics for Server No: 0"
		servers: regexp.MustCompile(`(?m)Printing statistics for Server No:`),
		// "sockperf: [Valid Duration] RunTime=1.539 sec; SentMessages=103017; ReceivedMessages=103017"
		window: regexp.MustCompile(`\[Valid Duration\] RunTime=([0-9.]+) sec`),
		// "sockperf: ====> avg-rtt=14.910 (std-dev=42.982)" or "====> avg-latency=7.183 (...)"
		mean: regexp.MustCompile(`avg-(rtt|latency)=([0-9.]+)`),
		// "sockperf: Total 103017 observations; each percentile contains 1030.17 observations"
		observations: regexp.MustCompile(`Total ([0-9]+) observations`),
		// "sockperf: ---> percentile 99.000 =   35.422"
		percentile: regexp.MustCompile(`(?m)---> percentile ([0-9.]+) =\s*([0-9.]+)`),
	}
}

// Parse implements Engine. transactions_per_s is the observation count over the
// measured window ("[Valid Duration] RunTime="); latencies are full round trips.
func (sockperf) Parse(_ Workload, stdout []byte) (Metrics, error) {
	p := newSockperfPatterns()
	text := p.ansi.ReplaceAllString(string(stdout), "")
	if f := p.failure.FindStringSubmatch(text); f != nil {
		return nil, &ToolError{Engine: NameSockperf, Message: strings.TrimSpace(f[1])}
	}
	if strings.TrimSpace(text) == "" {
		return nil, errors.New("sockperf output: empty stdout")
	}
	if n := len(p.servers.FindAllString(text, -1)); n != 1 {
		return nil, fmt.Errorf("sockperf output: expected statistics for exactly 1 server, got %d (%q)", n, excerpt([]byte(text)))
	}
	window, err := sockperfNumber(p.window, text, 1, "[Valid Duration] RunTime")
	if err != nil {
		return nil, err
	}
	if window <= 0 {
		return nil, fmt.Errorf("sockperf output: [Valid Duration] RunTime: expected > 0 s, got %v", window)
	}
	obs, err := sockperfNumber(p.observations, text, 1, "Total N observations")
	if err != nil {
		return nil, err
	}
	mean, err := sockperfNumber(p.mean, text, 2, "avg-rtt")
	if err != nil {
		return nil, err
	}
	scale := 1.0
	if p.mean.FindStringSubmatch(text)[1] == "latency" {
		scale = 2 // run without --full-rtt: every statistic is RTT/2
	}
	percentiles := map[string]float64{}
	for _, m := range p.percentile.FindAllStringSubmatch(text, -1) {
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			return nil, fmt.Errorf("sockperf output: percentile %s: %w", m[1], err)
		}
		percentiles[m[1]] = v
	}
	metrics := Metrics{
		MetricTransactionRate: obs / window,
		MetricLatencyMean:     mean * scale,
	}
	for _, want := range []struct{ label, metric string }{
		{"50.000", MetricLatencyP50}, {"90.000", MetricLatencyP90}, {"99.000", MetricLatencyP99},
	} {
		v, ok := percentiles[want.label]
		if !ok {
			return nil, fmt.Errorf("sockperf output: expected a line \"---> percentile %s = ...\", found none", want.label)
		}
		metrics[want.metric] = v * scale
	}
	return finite("sockperf output", metrics)
}

// sockperfNumber returns submatch group of re's first match in text as a number.
func sockperfNumber(re *regexp.Regexp, text string, group int, what string) (float64, error) {
	m := re.FindStringSubmatch(text)
	if m == nil {
		return 0, fmt.Errorf("sockperf output: expected %q, found none (%q)", what, excerpt([]byte(text)))
	}
	v, err := strconv.ParseFloat(m[group], 64)
	if err != nil {
		return 0, fmt.Errorf("sockperf output: %s: %w", what, err)
	}
	return v, nil
}

// WithRTTLog implements RTTLogger: sockperf's --full-log writes one line per round trip of the
// measured window (the warm-up is not logged), with --full-rtt the full round trip.
func (sockperf) WithRTTLog(argv []string, file string) []string {
	return append(append([]string{}, argv...), "--full-log", file)
}
