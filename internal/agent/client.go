package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/cnibench/cnibench/internal/agentcmd"
	"github.com/cnibench/cnibench/internal/setting"
)

const (
	// DefaultTimeout bounds each connect and each transaction's I/O. Loopback and pod-to-pod
	// round trips take tens of microseconds; seconds means the path is broken, not slow.
	DefaultTimeout = 5 * time.Second
	// DefaultMaxConsecutiveErrors is how many failures in a row end a run with an error: far
	// more than a transient glitch (a reset, a SYN drop) produces, few enough that a dead
	// server or exhausted ephemeral ports stop the client within a fraction of a second.
	DefaultMaxConsecutiveErrors = 1000
	// MaxSize caps --size: beyond 1 MiB a transaction measures bulk transfer, not latency.
	MaxSize = 1 << 20
)

// ClientOptions configures the rr and crr clients.
type ClientOptions struct {
	// Target is the server's IP address or DNS name. A name is resolved once, before the
	// run, so that no transaction includes a DNS lookup.
	Target string
	// Port is the server's TCP port.
	Port int
	// Duration is how long to keep starting transactions.
	Duration time.Duration
	// Size is the request and response size in bytes, >= 1; it must match the echo server's.
	Size int
	// Timeout bounds each connect and each transaction; 0 means DefaultTimeout.
	Timeout time.Duration
	// MaxConsecutiveErrors ends the run with an error; 0 means DefaultMaxConsecutiveErrors.
	MaxConsecutiveErrors int
	// Log receives warnings (ephemeral port exhaustion); nil discards them.
	Log io.Writer
	// ServerCloses makes a crr transaction end when the server closes the connection after
	// its reply (an echo server with CloseAfterReply) rather than by closing it first: the
	// TIME_WAIT state then lands on the server, and the client never runs out of ports.
	ServerCloses bool
}

// withDefaults fills zero values and validates; errors name the command-line flag.
func (o ClientOptions) withDefaults() (ClientOptions, error) {
	if o.Target == "" {
		return o, &setting.Error{Name: "target", Want: "required: the echo server's IP address or name"}
	}
	if o.Port < 1 || o.Port > 65535 {
		return o, &setting.Error{Name: "port", Value: strconv.Itoa(o.Port), Want: "must be between 1 and 65535"}
	}
	if o.Duration <= 0 {
		return o, &setting.Error{Name: "duration", Value: o.Duration.String(), Want: "must be positive"}
	}
	if err := validateSize(o.Size); err != nil {
		return o, err
	}
	if o.Timeout < 0 {
		return o, &setting.Error{Name: "timeout", Value: o.Timeout.String(), Want: "must be positive"}
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxConsecutiveErrors < 0 {
		return o, &setting.Error{Name: "maxConsecutiveErrors", Value: strconv.Itoa(o.MaxConsecutiveErrors), Want: "must be positive"}
	}
	if o.MaxConsecutiveErrors == 0 {
		o.MaxConsecutiveErrors = DefaultMaxConsecutiveErrors
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	return o, nil
}

func validateSize(n int) error {
	if n < 1 || n > MaxSize {
		return &setting.Error{Name: "size", Value: strconv.Itoa(n), Want: fmt.Sprintf("must be between 1 and %d bytes", MaxSize)}
	}
	return nil
}

// RR measures request/response latency over one TCP connection: write Size bytes, read Size
// bytes, for Duration. If the connection fails mid-run the error is counted and the client
// reconnects. Cancelling ctx aborts the run with an error.
func RR(ctx context.Context, o ClientOptions) (agentcmd.Result, error) {
	r, err := newRun(ctx, "rr", o)
	if err != nil {
		return agentcmd.Result{}, err
	}
	defer r.close()
	// A first connect that fails means there is nothing to measure: say so at once.
	conn, err := r.dial(ctx)
	if err != nil {
		return agentcmd.Result{}, fmt.Errorf("rr: connect to %s: %w", r.res.Address, err)
	}
	start := time.Now()
	end := start.Add(o.Duration)
	// One deadline for the whole run, not one per transaction, keeps timer updates out of
	// the loop; a transaction that hangs then ends the run at end+Timeout as an error.
	deadline := end.Add(r.o.Timeout)
	if !r.watch(conn, deadline) {
		_ = conn.Close()
		return agentcmd.Result{}, fmt.Errorf("rr: %w", context.Cause(ctx))
	}
	stopped := start
	for {
		t0 := time.Now()
		if !t0.Before(end) {
			stopped = t0
			break
		}
		if conn == nil {
			c, err := r.dial(ctx)
			if err == nil && !r.watch(c, deadline) {
				_ = c.Close()
				err = context.Cause(ctx)
			}
			if err != nil {
				if ctx.Err() != nil {
					return agentcmd.Result{}, fmt.Errorf("rr: %w", context.Cause(ctx))
				}
				if err := r.fail("dial", err); err != nil {
					return agentcmd.Result{}, err
				}
				continue
			}
			conn = c
			continue // the timed loop starts from a connected socket
		}
		phase, err := exchange(conn, r.req, r.resp)
		t1 := time.Now()
		if err != nil {
			_ = conn.Close()
			conn = nil
			if ctx.Err() != nil {
				return agentcmd.Result{}, fmt.Errorf("rr: %w", context.Cause(ctx))
			}
			if err := r.fail(phase, err); err != nil {
				return agentcmd.Result{}, err
			}
			continue
		}
		r.ok(t1.Sub(t0))
	}
	if conn != nil {
		_ = conn.Close()
	}
	return r.finish(stopped.Sub(start))
}

// CRR measures connect/request/response: per transaction dial, write Size bytes, read Size
// bytes and close, for Duration; the latency covers all four. Failures are counted and the
// loop goes on, up to MaxConsecutiveErrors in a row. Cancelling ctx aborts with an error.
//
// Whoever closes first keeps the connection's 4-tuple in TIME_WAIT for 60 s. When the client
// closes first, that holds its ephemeral port: outside loopback (where tcp_tw_reuse=2 recycles
// them) the sustainable rate to one server address is about ports/60 per second, ~470/s with
// the default 28,232-port range, and a run at 10,000 connections/s runs out in about 3 s
// (connects then fail with EADDRNOTAVAIL, reported as dial_eaddrnotavail errors plus a
// warning). A node's own namespace, shared with everything else the node does and measured
// round after round, runs out first: the host-network baseline becomes an artifact. With
// ServerCloses the server closes after its reply, as an HTTP/1.0 server does: the client
// reads the end of the stream and closes a connection already closed by the peer, which
// leaves no TIME_WAIT on its side, so no sysctl of the client's node matters. The latency then
// also covers the server's FIN, which follows its reply at once. SO_LINGER 0 would avoid
// TIME_WAIT too, but close with a RST, which changes what is measured.
func CRR(ctx context.Context, o ClientOptions) (agentcmd.Result, error) {
	r, err := newRun(ctx, "crr", o)
	if err != nil {
		return agentcmd.Result{}, err
	}
	defer r.close()
	start := time.Now()
	end := start.Add(o.Duration)
	stopped := start
	for {
		t0 := time.Now()
		if !t0.Before(end) {
			stopped = t0
			break
		}
		phase, err := r.connectExchangeClose(ctx, t0)
		t1 := time.Now()
		if err != nil {
			if ctx.Err() != nil {
				return agentcmd.Result{}, fmt.Errorf("crr: %w", context.Cause(ctx))
			}
			if err := r.fail(phase, err); err != nil {
				return agentcmd.Result{}, err
			}
			continue
		}
		r.ok(t1.Sub(t0))
	}
	return r.finish(stopped.Sub(start))
}

// connectExchangeClose is one CRR transaction, started at t0.
func (r *run) connectExchangeClose(ctx context.Context, t0 time.Time) (phase string, err error) {
	c, err := r.dial(ctx)
	if err != nil {
		return "dial", err
	}
	if !r.watch(c, t0.Add(r.o.Timeout)) {
		_ = c.Close()
		return "dial", context.Cause(ctx)
	}
	phase, err = exchange(c, r.req, r.resp)
	if err == nil && r.o.ServerCloses {
		phase, err = awaitClose(c)
	}
	// Closing a TCP socket only queues a FIN: it cannot fail in a way that says anything
	// about the transaction, which has already completed.
	_ = c.Close()
	return phase, err
}

// awaitClose reads the end of the stream the server closes after its reply.
func awaitClose(c net.Conn) (phase string, err error) {
	var one [1]byte
	n, err := c.Read(one[:])
	switch {
	case n > 0:
		return "close", errors.New("the server sent more than its reply instead of closing (an echo server without --close-after-reply?)")
	case errors.Is(err, io.EOF):
		return "", nil
	case err == nil:
		return "close", io.ErrNoProgress
	}
	return "close", err
}

// exchange writes req and reads exactly len(resp) bytes, naming the phase that failed.
func exchange(c net.Conn, req, resp []byte) (phase string, err error) {
	if _, err := c.Write(req); err != nil {
		return "write", err
	}
	if _, err := io.ReadFull(c, resp); err != nil {
		return "read", err
	}
	return "", nil
}

// run is the state one rr or crr run shares between its loop and its helpers.
type run struct {
	o         ClientOptions
	res       agentcmd.Result
	dialer    net.Dialer
	req, resp []byte
	lat       samples
	errs      errorTally
	intr      *interrupter
}

func newRun(ctx context.Context, mode string, o ClientOptions) (*run, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	addr, err := resolve(ctx, o.Target, o.Port, o.Timeout)
	if err != nil {
		return nil, err
	}
	r := &run{
		o: o,
		res: agentcmd.Result{
			Tool: "cnibench", Mode: mode, MessageSize: o.Size,
			Target: o.Target, Address: addr.String(),
		},
		// KeepAlive -1 spares four setsockopt calls per connection, which CRR would time;
		// Go turns TCP_NODELAY on for every TCP socket, so no option is needed for that.
		// MPTCP stays off (the Go default for dialers) so the path is plain TCP.
		dialer: net.Dialer{Timeout: o.Timeout, KeepAlive: -1},
		req:    make([]byte, o.Size),
		resp:   make([]byte, o.Size),
		lat:    make(samples, 0, initialSamples),
		errs:   errorTally{kinds: map[string]int64{}},
		intr:   newInterrupter(ctx),
	}
	r.dialer.SetMultipathTCP(false)
	return r, nil
}

func (r *run) close() { r.intr.stop() }

func (r *run) dial(ctx context.Context) (net.Conn, error) {
	return r.dialer.DialContext(ctx, "tcp", r.res.Address)
}

// watch sets c's deadline and hands c to the interrupter; false means ctx is already done.
// The deadline is set first: set after, it could overwrite the interrupter's past deadline.
func (r *run) watch(c net.Conn, deadline time.Time) bool {
	_ = c.SetDeadline(deadline)
	return r.intr.watch(c)
}

func (r *run) ok(d time.Duration) {
	r.lat = append(r.lat, d)
	r.res.Transactions++
	r.errs.consecutive = 0
}

// fail counts an error and returns a non-nil error when the run must stop.
func (r *run) fail(phase string, err error) error {
	kind := r.errs.add(phase, err)
	if kind == kindPortExhaustion && r.errs.kinds[kind] == 1 {
		fmt.Fprintf(r.o.Log, "warning: %s: %v\n", r.res.Mode, err)
	}
	if r.errs.consecutive < int64(r.o.MaxConsecutiveErrors) {
		return nil
	}
	msg := fmt.Sprintf("%s: stopped after %d consecutive errors (%d transactions completed; errors by kind %v); last: %v",
		r.res.Mode, r.errs.consecutive, r.res.Transactions, r.errs.kinds, r.errs.last)
	if w := r.portWarning(); w != "" {
		msg += "\n" + w
	}
	return errors.New(msg)
}

// finish fills the result from a run that lasted wall; the wall time covers failed attempts
// too, so that errors lower the rate rather than vanish from it.
func (r *run) finish(wall time.Duration) (agentcmd.Result, error) {
	r.res.DurationSec = wall.Seconds()
	r.res.Errors = r.errs.total
	if r.errs.total > 0 {
		r.res.ErrorKinds = r.errs.kinds
		r.res.LastError = r.errs.last.Error()
	}
	if w := r.portWarning(); w != "" {
		r.res.Warnings = append(r.res.Warnings, w)
		fmt.Fprintln(r.o.Log, "warning:", w)
	}
	if r.res.Transactions == 0 && r.errs.total == 0 {
		return agentcmd.Result{}, fmt.Errorf("%s: no transaction completed: %w", r.res.Mode, &setting.Error{Name: "duration", Value: r.o.Duration.String(), Want: "too short"})
	}
	if r.res.Transactions == 0 {
		return agentcmd.Result{}, fmt.Errorf("%s: no transaction completed in %s: %d errors, last: %v",
			r.res.Mode, wall.Round(time.Millisecond), r.errs.total, r.errs.last)
	}
	if wall > 0 {
		r.res.RatePerSec = float64(r.res.Transactions) / wall.Seconds()
	}
	r.res.LatencyUsec = r.lat.summarize()
	r.res.Histogram = r.lat.histogram()
	return r.res, nil
}

// portWarning explains EADDRNOTAVAIL failures, if there were any.
func (r *run) portWarning() string {
	n := r.errs.kinds[kindPortExhaustion]
	if n == 0 {
		return ""
	}
	return portExhaustionWarning(n, r.res.Address, "/proc")
}

// resolve turns the target into one address, so that the loop never resolves a name.
func resolve(ctx context.Context, target string, port int, timeout time.Duration) (netip.AddrPort, error) {
	if a, err := netip.ParseAddr(target); err == nil {
		return netip.AddrPortFrom(a, uint16(port)), nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", target)
	if err != nil {
		return netip.AddrPort{}, &setting.Error{Name: "target", Value: strconv.Quote(target), Err: fmt.Errorf("resolve: %w", err)}
	}
	if len(addrs) == 0 {
		return netip.AddrPort{}, &setting.Error{Name: "target", Value: strconv.Quote(target), Want: "resolves to no address"}
	}
	// The resolver returns addresses in the order a dial would try them (RFC 6724).
	return netip.AddrPortFrom(addrs[0].Unmap(), uint16(port)), nil
}

// interrupter lets a cancelled context interrupt whichever connection the loop is using, by
// moving its deadline into the past, so that SIGTERM stops a client blocked in a read.
type interrupter struct {
	mu   sync.Mutex
	conn net.Conn
	done bool
	stop func() bool
}

func newInterrupter(ctx context.Context) *interrupter {
	it := &interrupter{}
	it.stop = context.AfterFunc(ctx, func() {
		it.mu.Lock()
		defer it.mu.Unlock()
		it.done = true
		if it.conn != nil {
			_ = it.conn.SetDeadline(time.Unix(1, 0))
		}
	})
	return it
}

// watch makes c the connection to interrupt; false means the context is already done. The
// mutex, rather than an atomic, guarantees that either the callback sees c or watch sees done.
func (it *interrupter) watch(c net.Conn) bool {
	it.mu.Lock()
	defer it.mu.Unlock()
	if it.done {
		return false
	}
	it.conn = c
	return true
}
