package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/agentcmd"
)

// TestCRRPortExhaustion runs CRR clients in a private network namespace whose sysctls it may
// change without touching the host's: 10 local ports and no TIME_WAIT reuse, so that a client
// that closes first runs out of ports after 10 connections, as a node's would after about
// 28,000. It must report that clearly; and a client whose server closes first (the mode
// cnibench measures tcp-crr in) must not run out at all.
func TestCRRPortExhaustion(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for a private network namespace")
	}
	t.Run("client closes first", func(t *testing.T) {
		r := crrOnTenPorts(t, false)
		if r.Transactions < 1 || r.Transactions > 10 {
			t.Errorf("transactions = %d, want 1-10: one per local port", r.Transactions)
		}
		if r.ErrorKinds[kindPortExhaustion] == 0 || r.ErrorKinds[kindPortExhaustion] != r.Errors {
			t.Errorf("errors %d by kind %v, want all %s", r.Errors, r.ErrorKinds, kindPortExhaustion)
		}
		if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "40000-40009") || !strings.Contains(r.Warnings[0], "tcp_tw_reuse 0") {
			t.Errorf("warnings %q, want one naming the namespace's port range and tcp_tw_reuse", r.Warnings)
		}
	})
	t.Run("server closes first", func(t *testing.T) {
		r := crrOnTenPorts(t, true)
		if r.Transactions <= 50 || r.Errors != 0 || len(r.Warnings) != 0 {
			t.Errorf("%d transactions, %d errors %v, warnings %q; want far more than 10 ports' worth and no error",
				r.Transactions, r.Errors, r.ErrorKinds, r.Warnings)
		}
	})
}

// crrOnTenPorts runs crrInPrivateNetns on a thread of its own.
func crrOnTenPorts(t *testing.T, serverCloses bool) agentcmd.Result {
	t.Helper()
	type outcome struct {
		res agentcmd.Result
		err error
	}
	out := make(chan outcome, 1)
	go func() {
		// The thread moves to a new network namespace and is never unlocked, so the runtime
		// discards it when this goroutine ends instead of reusing it for host networking.
		runtime.LockOSThread()
		res, err := crrInPrivateNetns(serverCloses)
		out <- outcome{res, err}
	}()
	var o outcome
	select {
	case o = <-out:
	case <-time.After(time.Minute):
		t.Fatal("CRR in a private network namespace did not finish within a minute")
	}
	if o.err != nil {
		t.Fatal(o.err)
	}
	r := o.res
	t.Logf("%d transactions, %d errors %v; warnings:\n%s", r.Transactions, r.Errors, r.ErrorKinds, strings.Join(r.Warnings, "\n"))
	return r
}

// crrInPrivateNetns runs on a locked thread: it moves the thread to a new network namespace,
// brings up its loopback, narrows the port range and runs an echo server and a short CRR
// client there. Sockets belong to the namespace of the thread that creates them.
func crrInPrivateNetns(serverCloses bool) (agentcmd.Result, error) {
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		return agentcmd.Result{}, fmt.Errorf("unshare network namespace: %w", err)
	}
	if err := loopbackUp(); err != nil {
		return agentcmd.Result{}, err
	}
	// /proc/sys/net is the opening thread's namespace's: these writes stay in it.
	for name, v := range map[string]string{"ip_local_port_range": "40000 40009", "tcp_tw_reuse": "0"} {
		if err := os.WriteFile("/proc/sys/net/ipv4/"+name, []byte(v), 0o644); err != nil {
			return agentcmd.Result{}, fmt.Errorf("set %s in the private namespace: %w", name, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := ListenEcho(ctx, EchoOptions{Address: loopback, Size: 1, CloseAfterReply: serverCloses})
	if err != nil {
		return agentcmd.Result{}, err
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx) }()
	res, err := CRR(ctx, ClientOptions{
		Target: loopback, Port: s.Addr().(*net.TCPAddr).Port, Duration: 200 * time.Millisecond, Size: 1,
		MaxConsecutiveErrors: 1 << 30, ServerCloses: serverCloses,
	})
	cancel()
	return res, errors.Join(err, <-served)
}

// loopbackUp sets IFF_UP on lo, which a new network namespace starts without.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("bring lo up: socket: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring lo up: get flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring lo up: set flags: %w", err)
	}
	return nil
}
