package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"
)

// Outcomes of a connection probe.
const (
	ProbeOpen    = "open"    // the handshake completed: something listens and the path admits it
	ProbeRefused = "refused" // a RST came back: the path delivers, nothing listens
	ProbeTimeout = "timeout" // nothing came back: the SYN was dropped on the way, e.g. by a policy
)

// ProbeResult is what `cnibench agent probe` prints.
type ProbeResult struct {
	Outcome string `json:"outcome"`
}

// Probe opens one TCP connection to address and says how the attempt ended. A policy that
// drops is told from one that is not enforced by probing a port nobody listens on: refused
// before the policy, timeout once it is enforced.
func Probe(ctx context.Context, address string, timeout time.Duration) (ProbeResult, error) {
	d := net.Dialer{Timeout: timeout}
	conn, err := d.DialContext(ctx, "tcp", address)
	if err == nil {
		conn.Close()
		return ProbeResult{Outcome: ProbeOpen}, nil
	}
	if ctx.Err() != nil {
		return ProbeResult{}, ctx.Err()
	}
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return ProbeResult{Outcome: ProbeRefused}, nil
	case errors.As(err, &ne) && ne.Timeout():
		return ProbeResult{Outcome: ProbeTimeout}, nil
	}
	return ProbeResult{}, fmt.Errorf("probe %s: %w", address, err)
}
