package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/cnibench/cnibench/internal/lab"
)

// DeleteOptions are the inputs of Delete.
type DeleteOptions struct {
	Name   string
	Layout Layout
	Out    io.Writer
}

// ErrNotFound is returned by Delete for a name with neither state nor namespaces.
var ErrNotFound = errors.New("no such cluster")

// Delete stops every process of the cluster and removes every host object it created. It
// works from whatever a create got to, including one that was killed: names and ranges are
// recomputed from the spec written before anything else, and processes are found through the
// cluster's cgroup as well as its pid files.
func Delete(ctx context.Context, o DeleteOptions) error {
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Layout.Root == "" {
		o.Layout = DefaultLayout()
	}
	if err := lab.CheckClusterName(o.Name); err != nil {
		return err
	}
	spec, specErr := o.Layout.ReadSpec(o.Name)
	if specErr != nil && !errors.Is(specErr, fs.ErrNotExist) {
		return specErr
	}
	cg, err := detectCgroups()
	if err != nil {
		return err
	}
	haveSpec := specErr == nil
	if !haveSpec {
		if _, err := os.Stat(o.Layout.Dir(o.Name)); err != nil && len(namespacesOf(o.Name)) == 0 && !slices.Contains(cg.clusterTrees(), o.Name) {
			return fmt.Errorf("delete %s: %w", o.Name, ErrNotFound)
		}
		spec = Spec{LocalConfig: lab.LocalConfig{Name: o.Name}, Index: -1}
	} else {
		spec.Status = StatusDeleting
		_ = o.Layout.writeSpec(spec)
	}
	d := deleter{spec: spec, layout: o.Layout, cg: cg}
	var errs []error
	d.stopAll(ctx)
	errs = append(errs, d.unmountAll())
	errs = append(errs, d.removeNetwork(ctx))
	errs = append(errs, d.removeCgroups(ctx))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("delete %s: %w", o.Name, err)
	}
	if err := os.RemoveAll(o.Layout.Dir(o.Name)); err != nil {
		return fmt.Errorf("delete %s: remove state: %w", o.Name, err)
	}
	if err := o.Layout.releaseHostDirs(); err != nil {
		return fmt.Errorf("delete %s: %w", o.Name, err)
	}
	fmt.Fprintf(o.Out, "deleted cluster %s\n", o.Name)
	return nil
}

type deleter struct {
	spec   Spec
	layout Layout
	cg     cgroupTree
}

// stopAll stops processes in the order their dependencies need: node agents first (so they do
// not restart containers), then containers, the runtimes, the other daemons, and the API
// server and etcd last. Whatever remains in the cluster's cgroup is then killed.
func (d deleter) stopAll(ctx context.Context) {
	runDir := filepath.Join(d.layout.Dir(d.spec.Name), "run")
	byPidFile := func(suffixes ...string) []int {
		var pids []int
		entries, _ := os.ReadDir(runDir)
		for _, e := range entries {
			for _, s := range suffixes {
				if strings.HasSuffix(e.Name(), s+".pid") {
					if pid := readPid(filepath.Join(runDir, e.Name())); pid > 0 && inCgroup(pid, d.spec.CgroupRoot()) {
						pids = append(pids, pid)
					}
				}
			}
		}
		return pids
	}
	root := d.spec.CgroupRoot()
	stopPids(ctx, byPidFile("-kubelet", "-kube-proxy"), 10*time.Second)
	var containers []int
	for _, dir := range d.nodeCgroups() {
		containers = append(containers, d.cg.pidsUnder(dir+"/kubepods")...)
	}
	stopPids(ctx, containers, 0)
	stopPids(ctx, byPidFile("-containerd"), 10*time.Second)
	// Everything else but the API server and etcd at once, while they still answer: shims,
	// datapath daemons (whose shutdown talks to the API server), the external host, the
	// controllers. Then the API server and etcd without a grace: their state is about to be
	// removed, and a graceful API server waits for its in-flight requests (1.2 s on an idle
	// cluster, several on a loaded host) and, stopped beside etcd, does not exit at all.
	apiserver, etcd := byPidFile("kube-apiserver"), byPidFile("etcd")
	store := append(apiserver, etcd...)
	rest := slices.DeleteFunc(d.cg.pidsUnder(root), func(pid int) bool { return slices.Contains(store, pid) })
	stopPids(ctx, rest, 5*time.Second)
	stopPids(ctx, store, 0)
	// Empty must stay empty for a few checks: a daemon whose starter was killed mid-start may
	// still be in its nsenter/sh prologue, about to join the cgroup.
	for i, empty := 0, 0; i < 100 && empty < 3; i++ {
		pids := d.cg.pidsUnder(root)
		if len(pids) == 0 {
			empty++
			time.Sleep(100 * time.Millisecond)
			continue
		}
		empty = 0
		stopPids(ctx, pids, 0)
	}
}

// nodeCgroups lists the cluster's per-node cgroup paths that exist.
func (d deleter) nodeCgroups() []string {
	var out []string
	for _, name := range d.cg.children(d.spec.CgroupRoot()) {
		if strings.HasPrefix(name, "node") {
			out = append(out, d.spec.CgroupRoot()+"/"+name)
		}
	}
	return out
}

// unmountAll detaches every mount below the state directory (overlay rootfs, shm, pod netns,
// kubelet volumes), deepest first.
func (d deleter) unmountAll() error {
	prefix := d.layout.Dir(d.spec.Name)
	var errs []error
	for round := 0; round < 5; round++ {
		points, err := mountsUnder(prefix)
		if err != nil {
			return err
		}
		if len(points) == 0 {
			return nil
		}
		errs = errs[:0]
		for _, p := range points {
			if err := unix.Unmount(p, 0); err != nil {
				if err2 := unix.Unmount(p, unix.MNT_DETACH); err2 != nil && !errors.Is(err2, unix.EINVAL) && !errors.Is(err2, unix.ENOENT) {
					errs = append(errs, fmt.Errorf("unmount %s: %w", p, err2))
				}
			}
		}
	}
	if points, _ := mountsUnder(prefix); len(points) > 0 {
		errs = append(errs, fmt.Errorf("mounts remain: %s", strings.Join(points, ", ")))
	}
	return errors.Join(errs...)
}

// mountsUnder lists mount points below prefix, deepest first.
func mountsUnder(prefix string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	defer f.Close()
	var points []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 {
			mp := unescapeMount(fields[4])
			if mp == prefix || strings.HasPrefix(mp, prefix+"/") {
				points = append(points, mp)
			}
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	return points, sc.Err()
}

// unescapeMount decodes the octal escapes (\040 for space) of mountinfo paths.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v int
			if _, err := fmt.Sscanf(s[i+1:i+4], "%o", &v); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// removeNetwork deletes the namespaces (which takes their links with them), the root veth if
// it survived, and the unreachable route.
func (d deleter) removeNetwork(ctx context.Context) error {
	var errs []error
	for _, ns := range namespacesOf(d.spec.Name) {
		if err := run(ctx, "ip", "netns", "delete", ns); err != nil {
			errs = append(errs, err)
		}
	}
	if err := removeHostLink(ctx, d.spec.HostLink()); err != nil {
		errs = append(errs, err)
	}
	if d.spec.Index >= 0 {
		// Both blocks whatever the state says: a cluster killed during create may have written
		// its family and not yet its network.
		p := d.spec.Plan()
		routes, err := hostRoutes()
		if err != nil {
			return err
		}
		for _, r := range routes {
			switch r.String() {
			case p.Block().String():
				errs = append(errs, run(ctx, "ip", "route", "delete", "unreachable", r.String()))
			case p.Block6().String():
				errs = append(errs, run(ctx, "ip", "-6", "route", "delete", "unreachable", r.String()))
			}
		}
	}
	return errors.Join(errs...)
}

// removeHostLink deletes the root end of the cluster's veth unless the kernel has: deleting
// the namespace that holds the other end destroys the pair in the background, so the link can
// vanish between the check and the delete ("Cannot find device"), which is the state wanted.
func removeHostLink(ctx context.Context, link string) error {
	present := func() bool {
		_, err := os.Stat("/sys/class/net/" + link)
		return err == nil
	}
	if !present() {
		return nil
	}
	err := run(ctx, "ip", "link", "delete", link)
	if err == nil {
		return nil
	}
	// Still listed: the kernel may be tearing it down; give it a moment before calling it stuck.
	_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return !present(), nil
	})
	if !present() {
		return nil
	}
	return err
}

// removeCgroups removes the cluster's cgroup tree, retrying while the last tasks are torn down.
func (d deleter) removeCgroups(ctx context.Context) error {
	var err error
	for i := 0; i < 50; i++ {
		if err = d.cg.removeTree(d.spec.CgroupRoot()); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	return err
}

// DeleteAll deletes every cluster with state, and the namespaces of any cluster whose state
// is gone.
func DeleteAll(ctx context.Context, l Layout, out io.Writer) error {
	names, err := l.Names()
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, n := range names {
		seen[n] = true
	}
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		if n := clusterOfNetns(e.Name()); strings.HasPrefix(e.Name(), "cnb-") && n != "" && !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	// A killed create or delete can leave only a cgroup tree behind.
	if cg, err := detectCgroups(); err == nil {
		for _, n := range cg.clusterTrees() {
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	var errs []error
	for _, n := range names {
		if err := Delete(ctx, DeleteOptions{Name: n, Layout: l, Out: out}); err != nil {
			errs = append(errs, err)
		}
	}
	if len(names) == 0 {
		fmt.Fprintln(out, "no local clusters")
	}
	return errors.Join(errs...)
}
