// Package agentcmd is the command line of `cnibench agent`, the helpers that run inside the
// tools image (and on the external host): each subcommand's name and a typed value whose Argv
// is the command to exec, and what the commands print (output.go). The callers that run the
// agent in pods use it, cmd/cnibench's agent commands take their names from it, and a test
// there parses every value's Argv with those commands, so a flag renamed on one side fails the
// build's tests, not a run. The callers decode the agent's output with the types here and so
// never compile the agent itself.
package agentcmd

import (
	"strconv"
	"time"
)

// Binary is the cnibench binary's name in the tools image, where it is on PATH.
const Binary = "cnibench"

// Group is the command that holds the subcommands.
const Group = "agent"

// Subcommand names.
const (
	EchoServer      = "echo-server"
	RR              = "rr"
	CRR             = "crr"
	Stat            = "stat"
	Probe           = "probe"
	Run             = "run"
	Serve           = "serve"
	WhoAmI          = "whoami"
	ExternalServers = "external-servers"
	NameServer      = "name-server"
	HTTPGet         = "http-get"
	Split           = "split"
)

// Command is one invocation of an agent subcommand.
type Command interface {
	// Argv is the command line, from the binary's name on.
	Argv() []string
}

// argv starts a subcommand's command line.
func argv(sub string, args ...string) []string {
	return append([]string{Binary, Group, sub}, args...)
}

// StatCmd reads the container's CPU, memory and network counters.
type StatCmd struct{}

// Argv implements Command.
func (StatCmd) Argv() []string { return argv(Stat) }

// ProbeCmd connects to Target (host:port) once, or, with Until, repeatedly until that outcome.
type ProbeCmd struct {
	Target  string
	Timeout time.Duration // each attempt's handshake; 0: the agent's default
	// Until is "open" or "timeout" (ProbeOpen, ProbeTimeout); empty: one attempt.
	Until    string
	Interval time.Duration // with Until; 0: the agent's default
	MaxWait  time.Duration // with Until; 0: the agent's default
	// Confirm is how many attempts after the first must agree, with Until; nil: the
	// agent's default.
	Confirm *int
}

// Argv implements Command.
func (c ProbeCmd) Argv() []string {
	a := argv(Probe, "--target", c.Target)
	if c.Until != "" {
		a = append(a, "--until", c.Until)
	}
	if c.Interval > 0 {
		a = append(a, "--interval", c.Interval.String())
	}
	if c.Timeout > 0 {
		a = append(a, "--timeout", c.Timeout.String())
	}
	if c.Confirm != nil {
		a = append(a, "--confirm", strconv.Itoa(*c.Confirm))
	}
	if c.MaxWait > 0 {
		a = append(a, "--max-wait", c.MaxWait.String())
	}
	return a
}

// RunCmd runs Command (another process's argv) after the agent's barrier, timing its start on
// the node.
type RunCmd struct {
	Barrier bool
	// KeepAwake keeps CPUs out of idle while the command runs: the share of one of N pairs
	// (0: off).
	KeepAwake int
	// RTTLog is the sockperf --full-log file the command writes, read into a histogram.
	RTTLog  string
	Command []string
}

// Argv implements Command.
func (c RunCmd) Argv() []string {
	a := argv(Run)
	if c.Barrier {
		a = append(a, "--barrier")
	}
	if c.KeepAwake > 0 {
		a = append(a, "--keep-awake", strconv.Itoa(c.KeepAwake))
	}
	if c.RTTLog != "" {
		a = append(a, "--rtt-log", c.RTTLog)
	}
	return append(append(a, "--"), c.Command...)
}

// EchoServerCmd answers each Size-byte message with Size bytes on Port.
type EchoServerCmd struct {
	Port, Size int
	// CloseAfterReply closes each connection after its first reply (for CRR clients).
	CloseAfterReply bool
}

// Argv implements Command.
func (c EchoServerCmd) Argv() []string {
	a := argv(EchoServer, "--port", strconv.Itoa(c.Port), "--size", strconv.Itoa(c.Size))
	if c.CloseAfterReply {
		a = append(a, "--close-after-reply")
	}
	return a
}

// ClientCmd is the request/response client: RR over one connection, or CRR (a connection per
// transaction) when NewConnections.
type ClientCmd struct {
	NewConnections bool
	Target         string // IPv4, bare IPv6 or a DNS name
	Port, Size     int
	Duration       time.Duration
	// ServerCloses ends each CRR transaction when the server closes.
	ServerCloses bool
}

// Argv implements Command.
func (c ClientCmd) Argv() []string {
	sub := RR
	if c.NewConnections {
		sub = CRR
	}
	a := argv(sub, "--target", c.Target, "--port", strconv.Itoa(c.Port),
		"--duration", c.Duration.String(), "--size", strconv.Itoa(c.Size))
	if c.ServerCloses {
		a = append(a, "--server-closes")
	}
	return a
}

// SplitCmd runs k6 against a Gateway route and summarises which backend answered.
type SplitCmd struct {
	URL, Host, First string
	Weight, VUs      int
	Duration         time.Duration // whole seconds
}

// Argv implements Command.
func (c SplitCmd) Argv() []string {
	return argv(Split, "--url", c.URL, "--host", c.Host, "--first", c.First, "--weight", strconv.Itoa(c.Weight),
		"--vus", strconv.Itoa(c.VUs), "--duration", strconv.Itoa(int(c.Duration.Seconds()))+"s")
}

// NameServerCmd answers HTTP requests on Port with the pod's name.
type NameServerCmd struct{ Port int }

// Argv implements Command.
func (c NameServerCmd) Argv() []string { return argv(NameServer, "--port", strconv.Itoa(c.Port)) }

// HTTPGetCmd fetches URL with Host as the Host header.
type HTTPGetCmd struct{ URL, Host string }

// Argv implements Command.
func (c HTTPGetCmd) Argv() []string { return argv(HTTPGet, "--url", c.URL, "--host", c.Host) }

// ServeCmd runs the external host's agent, listening on Listen (host:port), with the token
// in TokenFile (made there when missing) and, when TLSCert and TLSKey are set, serving HTTPS
// with them. Self is the path of the cnibench binary on the host (not in an image, so not on
// PATH).
type ServeCmd struct{ Self, Listen, TokenFile, TLSCert, TLSKey string }

// Argv implements Command.
func (c ServeCmd) Argv() []string {
	a := []string{c.Self, Group, Serve, "--listen", c.Listen, "--token-file", c.TokenFile}
	if c.TLSCert != "" {
		a = append(a, "--tls-cert", c.TLSCert, "--tls-key", c.TLSKey)
	}
	return a
}

// WhoAmICmd asks the external agent at Server (host:port) which source address it sees,
// presenting Token; CA, when set, is the PEM certificate of the CA the agent's TLS certificate
// must be signed by.
type WhoAmICmd struct{ Server, Token, CA string }

// Argv implements Command.
func (c WhoAmICmd) Argv() []string {
	return withCA(argv(WhoAmI, "--server", c.Server, "--token", c.Token), c.CA)
}

// ExternalServersCmd asks the external agent at Server, presenting Token (and trusting CA, as
// WhoAmICmd), to start servers (Start: WORKLOAD=PORT, port 0 for one it picks) or to Stop
// every one.
type ExternalServersCmd struct {
	Server, Token, CA string
	Start             []string
	Stop              bool
}

// Argv implements Command.
func (c ExternalServersCmd) Argv() []string {
	a := withCA(argv(ExternalServers, "--server", c.Server, "--token", c.Token), c.CA)
	for _, s := range c.Start {
		a = append(a, "--start", s)
	}
	if c.Stop {
		a = append(a, "--stop")
	}
	return a
}

// withCA adds the agent's CA, as PEM text: a client pod has no file of it.
func withCA(a []string, ca string) []string {
	if ca != "" {
		a = append(a, "--ca-cert", ca)
	}
	return a
}
