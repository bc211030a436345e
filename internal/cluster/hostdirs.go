package cluster

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Some host directories are fixed by the tools themselves: `ip netns add` creates /run/netns
// (and bind-mounts it onto itself), the node runtimes need /var/lib/cni, and the kubelets
// /var/lib/kubelet and /var/log/containers, to exist as mount points for private mounts. When a cnibench cluster is the cause of one, a
// marker says so, and the last delete removes it again, so the host ends as it began.

// sharedHostDirs are the host directories a cluster may need to exist.
func sharedHostDirs() []string {
	return []string{"/run/netns", "/var/lib/cni", "/var/lib/kubelet", "/var/log/containers"}
}

func (l Layout) hostDirMarker(dir string) string {
	return filepath.Join(l.Root, ".created"+strings.ReplaceAll(dir, "/", "_"))
}

// claimHostDirs creates each missing shared directory, recording that cnibench made it.
// Called under the state lock, before any namespace exists.
func (l Layout) claimHostDirs() error {
	for _, dir := range sharedHostDirs() {
		if _, err := os.Stat(dir); err == nil || !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err := os.WriteFile(l.hostDirMarker(dir), nil, 0o644); err != nil {
			return fmt.Errorf("record creation of %s: %w", dir, err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", dir, err)
		}
	}
	return nil
}

// releaseHostDirs removes the shared directories cnibench created once no cluster is left and
// they are empty.
func (l Layout) releaseHostDirs() error {
	unlock, err := l.lock()
	if err != nil {
		return err
	}
	defer unlock()
	if names, _ := l.Names(); len(names) > 0 {
		return nil
	}
	for _, dir := range sharedHostDirs() {
		marker := l.hostDirMarker(dir)
		if _, err := os.Stat(marker); err != nil {
			continue
		}
		if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
			continue
		}
		// /run/netns is a mount point of its own once iproute2 has used it.
		for unix.Unmount(dir, unix.MNT_DETACH) == nil {
		}
		if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", dir, err)
		}
		if err := os.Remove(marker); err != nil {
			return fmt.Errorf("remove marker of %s: %w", dir, err)
		}
	}
	return nil
}
