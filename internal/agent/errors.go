package agent

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// kindPortExhaustion is the error kind of a connect that found no free ephemeral port.
const kindPortExhaustion = "dial_eaddrnotavail"

// errorTally counts a run's errors by kind ("<phase>_<reason>", e.g. "read_timeout").
type errorTally struct {
	total, consecutive int64
	kinds              map[string]int64
	last               error
}

// add counts err, which happened in phase (dial, write or read), and returns its kind.
func (t *errorTally) add(phase string, err error) string {
	kind := phase + "_" + reason(err)
	t.total++
	t.consecutive++
	t.kinds[kind]++
	t.last = fmt.Errorf("%s: %w", phase, err)
	return kind
}

// reason names the cause of a network error in a word a result reader can group by.
func reason(err error) string {
	switch {
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return "eaddrnotavail"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "reset"
	case errors.Is(err, syscall.EPIPE):
		return "broken_pipe"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "eof"
	case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, syscall.ETIMEDOUT):
		return "timeout"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "unreachable"
	}
	var ne interface{ Timeout() bool }
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	return "other"
}

// portExhaustionWarning explains n EADDRNOTAVAIL connect failures to addr, with the pod's
// own port range and TIME_WAIT reuse setting read from procRoot (they are per network
// namespace). Changing them is the caller's decision, not the agent's.
func portExhaustionWarning(n int64, addr, procRoot string) string {
	rangeText, ports := "unknown", 0
	if b, err := os.ReadFile(filepath.Join(procRoot, "sys/net/ipv4/ip_local_port_range")); err == nil {
		f := strings.Fields(string(b))
		if len(f) == 2 {
			lo, err1 := strconv.Atoi(f[0])
			hi, err2 := strconv.Atoi(f[1])
			if err1 == nil && err2 == nil && hi >= lo {
				rangeText, ports = fmt.Sprintf("%d-%d", lo, hi), hi-lo+1
			}
		}
	}
	reuse := "unknown"
	if b, err := os.ReadFile(filepath.Join(procRoot, "sys/net/ipv4/tcp_tw_reuse")); err == nil {
		reuse = strings.TrimSpace(string(b))
	}
	sustain := "(ports/60)"
	if ports > 0 {
		sustain = strconv.FormatFloat(float64(ports)/60, 'g', 3, 64)
	}
	return fmt.Sprintf("%d connects to %s failed with EADDRNOTAVAIL: the client ran out of ephemeral ports. "+
		"The client closes first, so each closed connection keeps its local port in TIME_WAIT for 60 s; "+
		"with net.ipv4.ip_local_port_range %s and net.ipv4.tcp_tw_reuse %s (2: loopback only) "+
		"this network namespace sustains about %s new connections/s to one server address. "+
		"Near exhaustion every connect also searches longer for a free port, so this run's CRR figures "+
		"are not comparable: shorten the run, or widen ip_local_port_range (a safe pod sysctl).",
		n, addr, rangeText, reuse, sustain)
}
