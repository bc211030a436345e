package cluster

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// kubeletKernelTunables are the host-wide sysctls (paths below /proc/sys) a kubelet sets to
// values of its own when it starts (vm.overcommit_memory=1, kernel.panic=10, ...; its
// container manager's setupKernelTunables), or refuses to start over when
// protectKernelDefaults is on. Neither is acceptable in a lab on someone's machine.
func kubeletKernelTunables() []string {
	return []string{
		"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
		"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes",
	}
}

// kubeletSysctlMounts is the start of the kubelet's mount script: with the directory of
// writeKernelTunableCopies as $1, it bind-mounts each copy over its /proc/sys file, so the
// kubelet reads the host's values and writes its own into the copies, never into the kernel.
// /proc turns slave first so that the binds cannot propagate to the host.
const kubeletSysctlMounts = `t=$1; shift
mount --make-rslave /proc || exit 1
for f in "$t"/*; do
	[ -e "$f" ] || continue
	mount --bind "$f" "/proc/sys/$(basename "$f" | tr . /)" || exit 1
done
`

// writeKernelTunableCopies writes, into dir, a copy of each of kubeletKernelTunables with
// the host's current value, named with dots for slashes. A sysctl this kernel lacks is left
// out: the kubelet would fail on it with or without a copy.
func writeKernelTunableCopies(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("kernel tunable copies: %w", err)
	}
	for _, p := range kubeletKernelTunables() {
		val, err := os.ReadFile(filepath.Join("/proc/sys", p))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read sysctl %s: %w", p, err)
		}
		name := strings.ReplaceAll(p, "/", ".")
		if err := os.WriteFile(filepath.Join(dir, name), val, 0o644); err != nil {
			return fmt.Errorf("copy sysctl %s: %w", name, err)
		}
	}
	return nil
}
