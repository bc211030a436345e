package external

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// handshakeBound is how long the agent may take to drop a connection whose client sent its
// bytes and then its end of stream: far below the agent's own 10 s header timeout, so an agent
// that waits for the timeout on some first flight fails the target.
const handshakeBound = 5 * time.Second

// lockedBuffer is the agent's log, written by its server goroutines and read by the test.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// clientHello records the first flight a Go TLS client sends (a ClientHello for the agent's
// address), the seed the fuzzer mutates into malformed handshakes.
func clientHello(t testing.TB, serverName string) []byte {
	t.Helper()
	client, server := net.Pipe()
	defer server.Close()
	go func() {
		c := tls.Client(client, &tls.Config{ServerName: serverName, MinVersion: tls.VersionTLS12})
		_ = c.Handshake() // fails once the pipe closes
		client.Close()
	}()
	buf := make([]byte, 4096)
	_ = server.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := server.Read(buf)
	if err != nil {
		t.Fatalf("record a ClientHello: %v", err)
	}
	return buf[:n]
}

// FuzzTLSHandshake sends a TLS agent's port a client's first bytes, fuzzed from a real
// ClientHello, plain HTTP and nothing, then the end of the stream. The agent must drop the
// connection within handshakeBound having sent at most a TLS alert or a refusal (never its API's
// answer), log the failure as a handshake or request error naming the peer, and still answer a
// client that trusts its CA and carries the token.
func FuzzTLSHandshake(f *testing.F) {
	log := &lockedBuffer{}
	a, _ := tlsAgentWith(f, ServeOptions{Log: log})
	hello := clientHello(f, "127.0.0.1")
	f.Add(hello)
	f.Add(hello[:len(hello)/2])
	f.Add(append(bytes.Clone(hello), hello...))
	f.Add([]byte("GET /whoami HTTP/1.1\r\nHost: agent\r\nAuthorization: Bearer " + testToken + "\r\n\r\n"))
	f.Add([]byte{0x80, 0x2e, 0x01, 0x00, 0x02}) // an SSLv2-style hello
	f.Add([]byte{0x16, 0x03, 0x01, 0xff, 0xff}) // a record header announcing 64 KiB
	f.Add([]byte{})
	var calls int
	f.Fuzz(func(t *testing.T, first []byte) {
		logBefore := len(log.String())
		reply := sendFirstFlight(t, a.Control, first)
		if bytes.Contains(reply, []byte(`"ip"`)) || bytes.Contains(reply, []byte("HTTP/1.1 200")) {
			t.Fatalf("the agent answered a client that never finished a handshake: %q", reply)
		}
		checkHandshakeLog(t, log.String()[logBefore:])
		if calls++; calls%50 == 1 { // a full handshake costs the fuzzer a few milliseconds
			ctx, cancel := context.WithTimeout(context.Background(), handshakeBound)
			defer cancel()
			if ip, err := a.WhoAmI(ctx); err != nil || ip != "127.0.0.1" {
				t.Fatalf("after %d bytes of a bad handshake, a trusted client gets %q, %v", len(first), ip, err)
			}
		}
	})
}

// sendFirstFlight writes first to addr, ends its side of the stream and reads what comes back
// until the agent closes the connection, which it must do within handshakeBound.
func sendFirstFlight(t *testing.T, addr string, first []byte) []byte {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, handshakeBound)
	if err != nil {
		t.Fatalf("dial the agent: %v", err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(handshakeBound))
	if len(first) > 0 {
		if _, err := conn.Write(first); err != nil && !errors.Is(err, net.ErrClosed) && !isReset(err) {
			t.Fatalf("write %d bytes: %v", len(first), err)
		}
	}
	_ = conn.(*net.TCPConn).CloseWrite()
	reply, err := io.ReadAll(io.LimitReader(conn, 64<<10))
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the agent held a connection %s after its client's %d bytes and end of stream", handshakeBound, len(first))
	}
	return reply
}

// isReset reports a connection the agent reset while its client was still writing: a
// refusal, not a fault.
func isReset(err error) bool {
	return strings.Contains(err.Error(), "connection reset") || strings.Contains(err.Error(), "broken pipe")
}

// checkHandshakeLog fails t on a line of the agent's log about the fuzzed connection that is
// neither a handshake or request error naming the peer nor the rate limit's count.
func checkHandshakeLog(t *testing.T, lines string) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSpace(lines), "\n") {
		switch {
		case line == "",
			strings.Contains(line, "TLS handshake error from 127.0.0.1:"),
			strings.HasPrefix(line, "(") && strings.Contains(line, "lines of the server's errors left out"):
		default:
			t.Fatalf("agent log line about a bad handshake: %q", line)
		}
	}
}
