// Command cnb-pause is the sandbox ("pause") process of the local cluster's
// pods. No registry is reachable, so the usual registry.k8s.io/pause image
// cannot be pulled; this static binary is packed into a local image instead.
//
// It does what the upstream pause container does: it holds the pod's
// namespaces open by staying alive, reaps any zombie children (it is PID 1
// of the pod's PID namespace when namespaces are shared), and exits 0 on
// SIGTERM or SIGINT so the runtime can stop the sandbox promptly.
package main

import (
	"fmt"
	"os"
	"os/signal"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) > 1 && (os.Args[1] == "-v" || os.Args[1] == "--version") {
		fmt.Println("cnb-pause")
		return
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, unix.SIGTERM, unix.SIGINT, unix.SIGCHLD)
	for sig := range sigs {
		if sig == unix.SIGCHLD {
			reap()
			continue
		}
		os.Exit(0)
	}
}

// reap collects every exited child. Signals coalesce, so one SIGCHLD may
// stand for several exits; loop until none is left.
func reap() {
	for {
		var status unix.WaitStatus
		pid, err := unix.Wait4(-1, &status, unix.WNOHANG, nil)
		if err == unix.EINTR {
			continue
		}
		if pid <= 0 || err != nil {
			return
		}
	}
}
