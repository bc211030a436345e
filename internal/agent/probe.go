package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"
	"time"

	"github.com/cnibench/cnibench/internal/agentcmd"
	"github.com/cnibench/cnibench/internal/setting"
)

// Probe opens one TCP connection to address and says how the attempt ended. A policy that
// drops is told from one that is not enforced by probing a port nobody listens on: refused
// before the policy, timeout once it is enforced.
func Probe(ctx context.Context, address string, timeout time.Duration) (agentcmd.ProbeResult, error) {
	d := net.Dialer{Timeout: timeout}
	conn, err := d.DialContext(ctx, "tcp", address)
	if err == nil {
		conn.Close()
		return agentcmd.ProbeResult{Outcome: agentcmd.ProbeOpen}, nil
	}
	if ctx.Err() != nil {
		return agentcmd.ProbeResult{}, ctx.Err()
	}
	if outcome, ok := probeOutcome(err); ok {
		return agentcmd.ProbeResult{Outcome: outcome}, nil
	}
	return agentcmd.ProbeResult{}, fmt.Errorf("probe %s: %w", address, err)
}

// probeOutcome names how a failed connection attempt ended, false for an error that says
// nothing about the path.
func probeOutcome(err error) (string, bool) {
	var ne net.Error
	switch {
	// A RST in answer to the SYN is ECONNREFUSED; one that arrives as the handshake completes
	// (a Service whose rules change under the connection, on a slow host) is ECONNRESET: either
	// way the path delivered and nothing accepted.
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET):
		return agentcmd.ProbeRefused, true
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return agentcmd.ProbeUnreachable, true
	case errors.Is(err, syscall.EPERM):
		return agentcmd.ProbeRejected, true
	case errors.As(err, &ne) && ne.Timeout():
		return agentcmd.ProbeTimeout, true
	}
	return "", false
}

// WatchOptions configure ProbeUntil.
type WatchOptions struct {
	Address string
	// Until is the outcome waited for: agentcmd.ProbeOpen (a Service or pod becoming reachable) or
	// agentcmd.ProbeTimeout (a policy starting to drop).
	Until string
	// Interval between the starts of attempts: the resolution of the reported time. Attempts
	// overlap when one takes longer, so a slow timeout does not coarsen it.
	Interval time.Duration
	// Timeout of one attempt: how long a SYN may go unanswered before it counts as dropped.
	Timeout time.Duration
	// MaxWait bounds the whole watch.
	MaxWait time.Duration
	// Confirm is how many attempts after the first one with the awaited outcome must agree
	// before it is reported, so that one lost SYN does not pass for an enforced policy.
	Confirm int
}

type attempt struct {
	seq     int
	started time.Time
	outcome string
	err     error
}

// ProbeUntil starts an attempt every Interval until Confirm+1 consecutive attempts (in start
// order) end with the awaited outcome, and reports when the first of them started.
func ProbeUntil(ctx context.Context, o WatchOptions) (agentcmd.WatchResult, error) {
	if o.Until != agentcmd.ProbeOpen && o.Until != agentcmd.ProbeTimeout {
		return agentcmd.WatchResult{}, &setting.Error{Name: "until", Value: strconv.Quote(o.Until), Want: fmt.Sprintf("expected %s or %s", agentcmd.ProbeOpen, agentcmd.ProbeTimeout)}
	}
	if o.Interval <= 0 || o.Timeout <= 0 || o.MaxWait <= 0 {
		return agentcmd.WatchResult{}, errors.New("interval, timeout and maxWait: expected positive durations")
	}
	ctx, cancel := context.WithTimeout(ctx, o.MaxWait+o.Timeout)
	defer cancel()
	results := make(chan attempt, 64)
	ticker := time.NewTicker(o.Interval)
	defer ticker.Stop()
	deadline := time.Now().Add(o.MaxWait)
	done := map[int]attempt{}
	began := time.Now()
	next, launched, streak := 0, 0, 0
	var first attempt
	launch := func() {
		a := attempt{seq: launched, started: time.Now()}
		launched++
		go func() {
			r, err := Probe(ctx, o.Address, o.Timeout)
			a.outcome, a.err = r.Outcome, err
			results <- a
		}()
	}
	launch()
	for {
		select {
		case <-ctx.Done():
			return agentcmd.WatchResult{}, fmt.Errorf("probe %s: no %s within %s (%d attempts)", o.Address, o.Until, o.MaxWait, launched)
		case <-ticker.C:
			if time.Now().Before(deadline) {
				launch()
			}
		case a := <-results:
			done[a.seq] = a
			// Judge attempts in the order they started, whatever order they end in.
			for ; done[next].started != (time.Time{}); next++ {
				cur := done[next]
				delete(done, next)
				if cur.err != nil && ctx.Err() == nil {
					return agentcmd.WatchResult{}, cur.err
				}
				if cur.outcome != o.Until {
					streak = 0
					continue
				}
				if streak == 0 {
					first = cur
				}
				if streak++; streak > o.Confirm {
					return agentcmd.WatchResult{Outcome: o.Until, FirstNS: first.started.UnixNano(), StartNS: began.UnixNano(), Attempts: launched,
						ResolutionNS: o.Interval.Nanoseconds()}, nil
				}
			}
		}
	}
}
