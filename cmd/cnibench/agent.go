package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cnibench/cnibench/internal/agent"
	"github.com/cnibench/cnibench/internal/agentcmd"
	"github.com/cnibench/cnibench/internal/external"
	"github.com/cnibench/cnibench/internal/monitor"
	"github.com/spf13/cobra"
)

// newAgentCommand groups the subcommands that run inside the tools image.
func newAgentCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:    agentcmd.Group,
		Short:  "In-cluster helpers run inside the tools image (echo server, rr/crr clients, node stats)",
		Hidden: true,
	}
	cmd.AddCommand(newAgentEchoServerCommand(),
		newAgentClientCommand(agentcmd.RR, "Request/response latency over one TCP connection; prints JSON", agent.RR),
		newAgentClientCommand(agentcmd.CRR, "Connect/request/response latency, a new TCP connection per transaction; prints JSON", agent.CRR),
		newAgentStatCommand(), newAgentProbeCommand(), newAgentRunCommand(),
		newAgentServeCommand(), newAgentWhoAmICommand(), newAgentExternalServersCommand(),
		newAgentNameServerCommand(), newAgentHTTPGetCommand(), newAgentSplitCommand())
	return cmd
}

func newAgentEchoServerCommand() *cobra.Command {
	o := agent.EchoOptions{}
	cmd := &cobra.Command{
		Use:   agentcmd.EchoServer,
		Short: "TCP server answering each --size-byte message with --size bytes, until SIGTERM",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Log = cmd.ErrOrStderr()
			return agent.RunEchoServer(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Address, "address", "", "address to listen on (default: every IPv4 and IPv6 address)")
	f.IntVar(&o.Port, "port", 0, "TCP port to listen on (required)")
	f.IntVar(&o.Size, "size", 1, "message size in bytes; must match the clients' --size")
	f.BoolVar(&o.CloseAfterReply, "close-after-reply", false, "close each connection after its first reply (for crr clients with --server-closes)")
	_ = cmd.MarkFlagRequired("port")
	return cmd
}

// newAgentClientCommand builds the rr and crr commands, which differ only in what they run.
func newAgentClientCommand(use, short string, run func(ctx context.Context, o agent.ClientOptions) (agentcmd.Result, error)) *cobra.Command {
	o := agent.ClientOptions{}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Log = cmd.ErrOrStderr()
			res, err := run(cmd.Context(), o)
			if err != nil {
				return err
			}
			return writeJSON(cmd, res)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Target, "target", "", "echo server IP address or DNS name (required; a name is resolved once)")
	f.IntVar(&o.Port, "port", 0, "echo server TCP port (required)")
	f.DurationVar(&o.Duration, "duration", 10*time.Second, "how long to run")
	f.IntVar(&o.Size, "size", 1, "request and response size in bytes; must match the server's --size")
	if use == agentcmd.CRR {
		f.BoolVar(&o.ServerCloses, "server-closes", false, "end each transaction when the server closes (an echo server with --close-after-reply): no TIME_WAIT on the client")
	}
	f.DurationVar(&o.Timeout, "timeout", agent.DefaultTimeout, "bound on each connect and each transaction")
	f.IntVar(&o.MaxConsecutiveErrors, "max-consecutive-errors", agent.DefaultMaxConsecutiveErrors, "stop with an error after this many failures in a row")
	_ = cmd.MarkFlagRequired("target")
	_ = cmd.MarkFlagRequired("port")
	return cmd
}

func newAgentStatCommand() *cobra.Command {
	return &cobra.Command{
		Use:   agentcmd.Stat,
		Short: "Print the node's CPU and memory counters and this container's cgroup usage as JSON",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := monitor.Read()
			if err != nil {
				return err
			}
			return writeJSON(cmd, s)
		},
	}
}

func newAgentProbeCommand() *cobra.Command {
	var target string
	var timeout time.Duration
	w := agent.WatchOptions{}
	cmd := &cobra.Command{
		Use:   agentcmd.Probe,
		Short: "Open one TCP connection and print how it ended (open, refused or timeout) as JSON; with --until, probe until that outcome and print when it began",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if w.Until != "" {
				w.Address, w.Timeout = target, timeout
				res, err := agent.ProbeUntil(cmd.Context(), w)
				if err != nil {
					return err
				}
				return writeJSON(cmd, res)
			}
			res, err := agent.Probe(cmd.Context(), target, timeout)
			if err != nil {
				return err
			}
			return writeJSON(cmd, res)
		},
	}
	f := cmd.Flags()
	f.StringVar(&target, "target", "", "host:port to connect to (required)")
	f.DurationVar(&timeout, "timeout", time.Second, "how long to wait for the handshake")
	f.StringVar(&w.Until, "until", "", "probe repeatedly until this outcome: open or timeout")
	f.DurationVar(&w.Interval, "interval", 20*time.Millisecond, "with --until: time between attempt starts (the resolution)")
	f.DurationVar(&w.MaxWait, "max-wait", 3*time.Minute, "with --until: give up after this long")
	f.IntVar(&w.Confirm, "confirm", 3, "with --until: attempts after the first that must agree")
	_ = cmd.MarkFlagRequired("target")
	return cmd
}

func newAgentRunCommand() *cobra.Command {
	o := agent.RunOptions{}
	cmd := &cobra.Command{
		Use:   agentcmd.Run + " [--barrier] [--rtt-log FILE] -- COMMAND [ARG...]",
		Short: "Run one client tool (after a barrier shared with other clients) and print its output, timing and round-trip histogram as JSON",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Argv, o.In, o.Err = args, cmd.InOrStdin(), cmd.ErrOrStderr()
			rep, err := agent.Run(cmd.Context(), o)
			if err != nil {
				return err
			}
			return agent.WriteReport(cmd.OutOrStdout(), rep)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.Barrier, "barrier", false, "print "+agentcmd.ReadyLine+" on stderr and start only when a line arrives on stdin")
	f.StringVar(&o.RTTLog, "rtt-log", "", "sockperf --full-log file the command writes, read into a round-trip histogram")
	f.IntVar(&o.KeepAwake, "keep-awake", 0, "keep CPUs out of idle while the command runs: the share of this node's CPUs of one of N pairs (0: off)")
	return cmd
}

// writeJSON prints v as one line of JSON on the command's stdout, for the caller to parse.
func writeJSON(cmd *cobra.Command, v any) error {
	if err := json.NewEncoder(cmd.OutOrStdout()).Encode(v); err != nil {
		return fmt.Errorf("write result: %w", err)
	}
	return nil
}

func newAgentServeCommand() *cobra.Command {
	o := external.ServeOptions{}
	var tokenFile string
	cmd := &cobra.Command{
		Use:   agentcmd.Serve,
		Short: "Be the external side of the egress paths: run the servers a run asks for and tell clients their source address",
		Long: `Run on a machine outside the cluster (the local cluster runs one in its external namespace).
A run reaches it from its client pod: it asks it to start the servers of its workloads (the same
commands server pods run: iperf3, sockperf and cnibench's echo server, which must be installed),
then before each egress sample asks it which source address the pod's connection arrived from.

Every request must carry the token in --token-file (a new random one is written there, mode
0600, when the file does not exist): give the run that file (--external-token-file, or the
target's external.tokenFile). Servers stop when the run says so, when the agent ends, and after
--idle-timeout without a request, so that a run that died leaves nothing running.

With --tls-cert and --tls-key the API is HTTPS: give the run the certificate of the CA that
signed it (--external-ca-file, or the target's external.caFile); the certificate must name every
address the run reaches the agent by (external.address and external.gatewayAddress). Without
them the API is plain HTTP, and the token crosses the network in the clear: listen on a network
you trust.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			token, created, err := external.TokenFile(tokenFile)
			if err != nil {
				return fmt.Errorf("--token-file: %w", err)
			}
			if created {
				fmt.Fprintf(cmd.ErrOrStderr(), "wrote a new token to %s: give the run that file (--external-token-file)\n", tokenFile)
			}
			o.Log, o.Self, o.Token = cmd.ErrOrStderr(), external.SelfBinary(), token
			return external.Serve(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Listen, "listen", fmt.Sprintf(":%d", external.DefaultServePort), "host:port of the control API")
	f.StringVar(&tokenFile, "token-file", "", "file holding the token every request must carry; made, with a new random token, when missing (required)")
	f.DurationVar(&o.IdleTimeout, "idle-timeout", external.DefaultIdleTimeout, "stop every server after this long without a request")
	f.IntVar(&o.MaxServers, "max-servers", external.DefaultMaxServers, "servers alive at once, at most")
	f.StringVar(&o.TLSCert, "tls-cert", "", "PEM certificate to serve HTTPS with (with --tls-key)")
	f.StringVar(&o.TLSKey, "tls-key", "", "PEM private key of --tls-cert")
	_ = cmd.MarkFlagRequired("token-file")
	cmd.MarkFlagsRequiredTogether("tls-cert", "tls-key")
	return cmd
}

func newAgentWhoAmICommand() *cobra.Command {
	var a external.Agent
	cmd := &cobra.Command{
		Use:   agentcmd.WhoAmI,
		Short: "Print the source address an external agent saw this connection come from",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ip, err := a.WhoAmI(cmd.Context())
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), ip)
			return err
		},
	}
	externalAgentFlags(cmd, &a)
	return cmd
}

// externalAgentFlags binds the address, token and CA of the external agent a command talks to.
func externalAgentFlags(cmd *cobra.Command, a *external.Agent) {
	cmd.Flags().StringVar(&a.Control, "server", "", "host:port of the external agent (required)")
	cmd.Flags().StringVar(&a.Token, "token", "", "the token the agent was started with (required)")
	cmd.Flags().Var((*textBytes)(&a.CA), "ca-cert", "PEM text (not a file: a pod has none) of the CA that signed the agent's TLS certificate; set, the agent is reached over HTTPS")
	_ = cmd.MarkFlagRequired("server")
	_ = cmd.MarkFlagRequired("token")
}

// textBytes is a flag whose text is kept as bytes, as given.
type textBytes []byte

func (b *textBytes) String() string     { return string(*b) }
func (b *textBytes) Set(v string) error { *b = []byte(v); return nil }
func (b *textBytes) Type() string       { return "text" }

func newAgentExternalServersCommand() *cobra.Command {
	var a external.Agent
	var specs []string
	var stop bool
	cmd := &cobra.Command{
		Use:   agentcmd.ExternalServers + " --server HOST:PORT --token TOKEN (--start WORKLOAD=PORT... | --stop)",
		Short: "Ask an external agent to run the servers of workloads (port 0: it picks one), printing them with their ports as JSON, or to stop them all",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if stop {
				return a.StopServers(cmd.Context())
			}
			servers, err := external.ParseServers(specs)
			if err != nil {
				return err
			}
			got, err := a.StartServers(cmd.Context(), servers)
			if err != nil {
				return err
			}
			return writeJSON(cmd, got)
		},
	}
	externalAgentFlags(cmd, &a)
	f := cmd.Flags()
	f.StringArrayVar(&specs, "start", nil, "a workload ID and the port its server listens on, WORKLOAD=PORT (repeatable)")
	f.BoolVar(&stop, "stop", false, "stop every server the agent runs")
	cmd.MarkFlagsMutuallyExclusive("start", "stop")
	cmd.MarkFlagsOneRequired("start", "stop")
	return cmd
}

func newAgentNameServerCommand() *cobra.Command {
	o := agent.NameServerOptions{}
	cmd := &cobra.Command{
		Use:   agentcmd.NameServer,
		Short: "HTTP server answering every request with its pod's name (a split's backend), until SIGTERM",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Log = cmd.ErrOrStderr()
			return agent.RunNameServer(cmd.Context(), o)
		},
	}
	cmd.Flags().IntVar(&o.Port, "port", 0, "TCP port to listen on (required)")
	cmd.Flags().StringVar(&o.Name, "name", "", "what to answer (default: the host name, which is the pod's name)")
	_ = cmd.MarkFlagRequired("port")
	return cmd
}

func newAgentHTTPGetCommand() *cobra.Command {
	var url, host string
	cmd := &cobra.Command{
		Use:   agentcmd.HTTPGet,
		Short: "GET a URL once and print the body of its 200 answer",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			body, err := external.Get(cmd.Context(), url, host)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), body)
			return err
		},
	}
	cmd.Flags().StringVar(&url, "url", "", "URL to GET (required)")
	cmd.Flags().StringVar(&host, "host", "", "Host header (default: the URL's host)")
	_ = cmd.MarkFlagRequired("url")
	return cmd
}

func newAgentSplitCommand() *cobra.Command {
	o := agent.SplitOptions{}
	var weight int
	cmd := &cobra.Command{
		Use:   agentcmd.Split,
		Short: "Load a weighted HTTP split with k6 and print its accuracy per window, rate and latency as JSON",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Summary.Weight = float64(weight)
			sum, err := agent.Split(cmd.Context(), o)
			if err != nil {
				return err
			}
			return writeJSON(cmd, sum)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Script.URL, "url", "", "URL every request GETs: the Gateway's address and port (required)")
	f.StringVar(&o.Script.Host, "host", "", "Host header selecting the HTTPRoute")
	f.IntVar(&o.Script.VUs, "vus", 1, "k6 virtual users")
	f.DurationVar(&o.Script.Duration, "duration", 10*time.Second, "how long the virtual users send, whole seconds")
	f.StringVar(&o.Summary.First, "first", "", "pod name of the backend that gets --weight (required)")
	f.IntVar(&weight, "weight", 0, "percent of requests the route sends to --first")
	f.DurationVar(&o.Summary.Window, "window", 0, "window the shares are computed over (default 5s)")
	_ = cmd.MarkFlagRequired("url")
	_ = cmd.MarkFlagRequired("first")
	return cmd
}
