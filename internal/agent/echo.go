package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/cnibench/cnibench/internal/setting"
)

// EchoOptions configures the echo server.
type EchoOptions struct {
	// Address is the local address to listen on; empty means every address, IPv4 and IPv6.
	Address string
	// Port is the TCP port to listen on; 0 picks a free one (tests).
	Port int
	// Size is the message size in bytes, which must match the clients' size: the server
	// answers each complete message of Size bytes with Size bytes.
	Size int
	// Log receives the "listening" line; nil discards it.
	Log io.Writer
	// CloseAfterReply closes each connection after its first reply, for crr clients with
	// ServerCloses: the TIME_WAIT state then stays on the server's side.
	CloseAfterReply bool
}

func (o EchoOptions) validate() error {
	if o.Port < 0 || o.Port > 65535 {
		return &setting.Error{Name: "port", Value: strconv.Itoa(o.Port), Want: "must be between 0 (any free port) and 65535"}
	}
	return validateSize(o.Size)
}

// EchoServer answers each Size-byte request on a TCP connection with Size bytes, one goroutine
// per connection, which is what the rr and crr clients expect on the other side.
type EchoServer struct {
	ln         net.Listener
	size       int
	closeAfter bool
}

// ListenEcho opens the echo server's listening socket; Serve then answers connections.
func ListenEcho(ctx context.Context, o EchoOptions) (*EchoServer, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	// An empty host makes Go listen on [::] with IPV6_V6ONLY off when the kernel has IPv6,
	// which accepts IPv4 too, and on 0.0.0.0 otherwise: "every address" in both cases.
	lc := listenConfig()
	ln, err := lc.Listen(ctx, "tcp", net.JoinHostPort(o.Address, strconv.Itoa(o.Port)))
	if err != nil {
		return nil, fmt.Errorf("echo server: listen on port %d: %w", o.Port, err)
	}
	return &EchoServer{ln: ln, size: o.Size, closeAfter: o.CloseAfterReply}, nil
}

// listenConfig is how the echo server listens; tests check the sockets it makes.
func listenConfig() *net.ListenConfig {
	// KeepAlive -1: Go would otherwise set four keepalive socket options on every accepted
	// connection, syscalls that would land inside every CRR transaction.
	lc := &net.ListenConfig{KeepAlive: -1}
	// Since Go 1.24 listeners are Multipath TCP sockets by default where the kernel has it
	// (net.mptcp.enabled=1, the default, in every pod network namespace). Plain TCP clients
	// then get a fallback MPTCP socket on accept, whose extra layer would be measured as if it
	// were the pod network's cost and would not match what sockperf or netperf measure.
	lc.SetMultipathTCP(false)
	return lc
}

// Addr is the address the server listens on (with the chosen port when Port was 0).
func (s *EchoServer) Addr() net.Addr { return s.ln.Addr() }

// Serve accepts and answers connections until ctx is cancelled, then closes the listener and
// every open connection, waits for their goroutines and returns nil. It closes the listener
// on any return.
func (s *EchoServer) Serve(ctx context.Context) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns = map[net.Conn]struct{}{}
		done  bool
	)
	// Cancellation closes the listener, which unblocks Accept, and every connection, which
	// unblocks the handlers' reads.
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		done = true
		_ = s.ln.Close()
		for c := range conns {
			_ = c.Close()
		}
	})
	defer func() {
		stop()
		_ = s.ln.Close()
		mu.Lock()
		done = true
		for c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	}()

	backoff := time.Duration(0)
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			// Out of file descriptors or a connection aborted before accept: transient
			// conditions under a CRR storm that must not kill the server. Back off as
			// net/http does so a persistent EMFILE does not spin.
			if isTemporaryAccept(err) {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				if err := sleepCtx(ctx, backoff); err != nil {
					return nil
				}
				continue
			}
			return fmt.Errorf("echo server: accept: %w", err)
		}
		backoff = 0
		mu.Lock()
		if done {
			mu.Unlock()
			_ = c.Close()
			return nil
		}
		conns[c] = struct{}{}
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.handle(c)
			mu.Lock()
			delete(conns, c)
			mu.Unlock()
			_ = c.Close()
		}()
	}
}

// handle echoes Size-byte messages until the peer closes or an error occurs. Errors end only
// this connection: resets and half-sent messages are the client's business, which counts them.
// TCP_NODELAY is already on: Go sets it on every TCP connection it creates (see the
// TestNoDelay test), so setting it again would only add a syscall per CRR connection.
func (s *EchoServer) handle(c net.Conn) {
	buf := make([]byte, s.size)
	for {
		if _, err := io.ReadFull(c, buf); err != nil {
			return
		}
		if _, err := c.Write(buf); err != nil || s.closeAfter {
			return
		}
	}
}

// RunEchoServer listens, logs the address and serves until ctx is cancelled (SIGTERM or
// SIGINT in the agent), which is a normal exit.
func RunEchoServer(ctx context.Context, o EchoOptions) error {
	s, err := ListenEcho(ctx, o)
	if err != nil {
		return err
	}
	if o.Log != nil {
		fmt.Fprintf(o.Log, "echo server listening on %s, message size %d bytes\n", s.Addr(), o.Size)
	}
	return s.Serve(ctx)
}

// isTemporaryAccept reports accept errors after which the listener still works: resource
// shortages that clear when connections close. (Go already retries ECONNABORTED itself.)
func isTemporaryAccept(err error) bool {
	for _, e := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// sleepCtx waits d or until ctx is cancelled, returning ctx's error in that case.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
