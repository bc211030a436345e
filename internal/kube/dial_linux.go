package kube

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// dialControl sets TCP_USER_TIMEOUT on a connection to the API server (see userTimeout).
func dialControl(_, _ string, c syscall.RawConn) error {
	var sockErr error
	err := c.Control(func(fd uintptr) {
		sockErr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(userTimeout.Milliseconds()))
	})
	if err != nil {
		return err
	}
	return sockErr
}
