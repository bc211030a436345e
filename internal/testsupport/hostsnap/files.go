package hostsnap

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// fixedPaths are host locations that components of a cluster write to by default or by a
// path compiled in: the kubelet, container runtimes, CNI plugins, flannel and cilium.
func fixedPaths() []string {
	return []string{
		"/var/log/containers", "/var/log/pods", "/var/lib/kubelet", "/var/lib/cni", "/var/lib/containerd",
		"/run/containerd", "/run/nri", "/run/flannel", "/run/cilium", "/var/run/cilium", "/var/lib/cilium",
		"/etc/cni", "/opt/cni", "/opt/containerd", "/etc/kubernetes", "/var/lib/etcd", "/sys/fs/bpf",
		"/usr/libexec/kubernetes",
	}
}

// runtimeTempPatterns are files runtimes have left in the host's /tmp (crun's crun.XXXXXX,
// most likely when killed mid-start): a node's runtime must keep them in a /tmp of its own.
func runtimeTempPatterns() []string { return []string{"/tmp/crun.*"} }

// takeFiles records each fixed path's existence and its entries, and the runtimes' temporary
// files in the host's /tmp.
func takeFiles(_ context.Context, s *Snapshot) error {
	entries, err := listPaths(fixedPaths())
	s.Files = append(s.Files, entries...)
	for _, pattern := range runtimeTempPatterns() {
		matches, _ := filepath.Glob(pattern) // the pattern is well-formed
		for _, m := range matches {
			s.Files = append(s.Files, "path "+m)
		}
	}
	return err
}

// listPaths lists each existing root and what lies below it, two levels deep: enough to see a
// leftover socket, symlink or directory without walking a large tree.
func listPaths(roots []string) ([]string, error) {
	var out []string
	for _, root := range roots {
		if _, err := os.Lstat(root); errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			return out, fmt.Errorf("stat %s: %w", root, err)
		}
		out = append(out, "path "+root)
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || p == root {
				return nil
			}
			out = append(out, "path "+p)
			if rel, _ := filepath.Rel(root, p); d.IsDir() && strings.Count(rel, string(filepath.Separator)) >= 1 {
				return filepath.SkipDir
			}
			return nil
		})
		if err != nil {
			return out, fmt.Errorf("walk %s: %w", root, err)
		}
	}
	return out, nil
}
