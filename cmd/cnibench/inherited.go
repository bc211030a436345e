package main

import (
	"errors"
	"math"

	"golang.org/x/sys/unix"
)

// closeInheritedOnExec marks every descriptor cnibench inherited beyond stdin, stdout and
// stderr close-on-exec, so that nothing it starts inherits them. A local cluster's daemons
// outlive the command that starts them: given a descriptor of the caller's, such as the lock
// of `flock LOCK cnibench cluster create` or a CI step's pipe, they would hold that lock or
// keep that step waiting until the cluster is deleted. The descriptors Go opens are
// close-on-exec already; cnibench itself may still use the inherited ones.
func closeInheritedOnExec() error {
	err := unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC)
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) {
		// Kernels before 5.11: nothing to do but leave them as they are.
		return nil
	}
	return err
}
