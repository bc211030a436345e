package hostsnap

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/internal/tuning"
)

const (
	cgroupRoot = "/sys/fs/cgroup"
	bpfRoot    = "/sys/fs/bpf"
	// commLen is the kernel's TASK_COMM_LEN minus the NUL: longer names
	// such as containerd-shim-runc-v2 are truncated in /proc/PID/comm.
	commLen = 15
)

// daemonNames returns the executables cnibench runs or that run on its
// behalf; any of them surviving a cluster delete is a leak.
func daemonNames() map[string]bool {
	names := map[string]bool{}
	for _, n := range []string{
		"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler",
		"kubelet", "kube-proxy", "containerd", "containerd-shim-runc-v2",
		"containerd-shim", "runc", "crun", "coredns", "iperf3", "sockperf",
		"flanneld", "cilium-agent", "cilium-operator", "pause", "cnb-pause",
		"runsc", "runsc-gofer", "runsc-sandbox", "containerd-shim-runsc-v1", "stress-ng",
		"calico-node", "crio", "conmon", "pinns", "youki", "sysbench", "stream", "k6",
		"traefik", "registry", "netserver", "netperf", "envoy", "envoy-gateway",
		"perf", // a profiled sample's recording
	} {
		names[n] = true
	}
	return names
}

// toolchainNames returns Go toolchain commands. Their arguments routinely
// contain the module path (".../cnibench/cnibench") while `go test ./...`
// builds other packages in parallel, so they would otherwise be reported
// as cnibench processes that come and go.
func toolchainNames() map[string]bool {
	return map[string]bool{
		"go": true, "compile": true, "link": true, "asm": true, "cgo": true,
		"vet": true, "cover": true, "gopls": true, "gofmt": true,
	}
}

// mountEntry is one parsed line of /proc/self/mountinfo.
type mountEntry struct {
	point, fstype string
}

func readMountinfo() ([]mountEntry, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	return parseMountinfo(string(b))
}

// parseMountinfo extracts mount point and filesystem type. The number of
// optional fields varies, so the type is located after the "-" separator.
func parseMountinfo(text string) ([]mountEntry, error) {
	var out []mountEntry
	for _, line := range strings.Split(text, "\n") {
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		sep := -1
		for i := 6; i < len(f); i++ {
			if f[i] == "-" {
				sep = i
				break
			}
		}
		if len(f) < 5 || sep < 0 || sep+1 >= len(f) {
			return nil, fmt.Errorf("parse mountinfo line %q: unexpected format", line)
		}
		out = append(out, mountEntry{point: f[4], fstype: f[sep+1]})
	}
	return out, nil
}

func takeMounts(_ context.Context, s *Snapshot) error {
	mounts, err := readMountinfo()
	if err != nil {
		return err
	}
	for _, m := range mounts {
		s.Mounts = append(s.Mounts, "mount "+m.point+" "+m.fstype)
	}
	return nil
}

// takeCgroups records every top-level cgroup (so anything new at the top
// shows) and every cgroup at any depth named cnb*, with its descendants.
// Other cgroups belong to the host and churn with its services.
func takeCgroups(ctx context.Context, s *Snapshot) error {
	hier, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	for _, h := range hier {
		if err := ctx.Err(); err != nil {
			return err
		}
		entries, err := cgroupEntries(h.dir, h.label)
		if err != nil {
			return err
		}
		s.Cgroups = append(s.Cgroups, entries...)
	}
	return nil
}

type hierarchy struct{ label, dir string }

// cgroupHierarchies lists mounted hierarchies: the single tree of a pure
// cgroup v2 host, or one per v1 controller (plus "unified") otherwise.
// Symlinks such as cpu -> cpu,cpuacct are skipped so a tree is walked once.
func cgroupHierarchies() ([]hierarchy, error) {
	if _, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers")); err == nil {
		return []hierarchy{{label: "", dir: cgroupRoot}}, nil
	}
	ents, err := os.ReadDir(cgroupRoot)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", cgroupRoot, err)
	}
	var out []hierarchy
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, hierarchy{label: e.Name(), dir: filepath.Join(cgroupRoot, e.Name())})
		}
	}
	return out, nil
}

func cgroupEntries(dir, label string) ([]string, error) {
	var entries []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			// Cgroups of exiting services disappear while being walked.
			if isGone(err) {
				return nil
			}
			return err
		}
		if !d.IsDir() || p == dir {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if !strings.Contains(rel, "/") || hasCnbComponent(rel) {
			entries = append(entries, "cgroup "+path.Join(label, filepath.ToSlash(rel)))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("walk cgroups %s: %w", dir, err)
	}
	return entries, nil
}

// hasCnbComponent reports whether any element of a slash-separated path
// starts with "cnb", the prefix of every cgroup cnibench creates.
func hasCnbComponent(p string) bool {
	for _, c := range strings.Split(p, "/") {
		if strings.HasPrefix(c, "cnb") {
			return true
		}
	}
	return false
}

// takeProcesses records cnibench-related processes as "comm: cmdline".
// The caller and its ancestors are excluded: a test binary or a
// `cnibench ...` command taking the snapshot is not a leftover.
func takeProcesses(ctx context.Context, s *Snapshot) error {
	pids, err := listPIDs()
	if err != nil {
		return err
	}
	skip := selfAndAncestors()
	daemons, toolchain := daemonNames(), toolchainNames()
	for _, pid := range pids {
		if err := ctx.Err(); err != nil {
			return err
		}
		if skip[pid] || zombie(pid) {
			continue
		}
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err != nil {
			if isUnreadable(err) {
				continue
			}
			return fmt.Errorf("read comm of pid %d: %w", pid, err)
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			if isUnreadable(err) {
				continue
			}
			return fmt.Errorf("read cmdline of pid %d: %w", pid, err)
		}
		cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		if err != nil {
			if isUnreadable(err) {
				continue
			}
			return fmt.Errorf("read cgroup of pid %d: %w", pid, err)
		}
		p := procInfo{
			comm:   strings.TrimSpace(string(comm)),
			args:   splitCmdline(cmdline),
			cgroup: string(cg),
		}
		if p.matches(daemons, toolchain) {
			s.Processes = append(s.Processes, p.entry())
		}
	}
	return nil
}

// procInfo is what takeProcesses reads about one process.
type procInfo struct {
	comm   string
	args   []string
	cgroup string // contents of /proc/PID/cgroup
}

func (p procInfo) entry() string {
	cmd := strings.Join(p.args, " ")
	if cmd == "" {
		// Zombies and kernel threads have no command line.
		cmd = "[no cmdline]"
	}
	return "process " + p.comm + ": " + cmd
}

// matches decides whether a process belongs to cnibench: a known daemon
// by name, a member of a cnb* cgroup, or an argument naming a cnibench
// object. Arguments are matched by final path element rather than as raw
// substrings, because a checkout path like /src/cnibench/internal/x.go in
// an unrelated process must not count.
func (p procInfo) matches(daemons, toolchain map[string]bool) bool {
	argv0 := ""
	if len(p.args) > 0 {
		argv0 = filepath.Base(p.args[0])
	}
	if toolchain[p.comm] || toolchain[argv0] {
		return false
	}
	if daemons[argv0] {
		return true
	}
	for n := range daemons {
		if p.comm == n || (len(p.comm) == commLen && strings.HasPrefix(n, p.comm)) {
			return true
		}
	}
	for _, line := range strings.Split(p.cgroup, "\n") {
		// Format: hierarchy-ID:controllers:path
		if parts := strings.SplitN(line, ":", 3); len(parts) == 3 && hasCnbComponent(parts[2]) {
			return true
		}
	}
	for _, a := range p.args {
		for _, tok := range strings.Fields(a) {
			if argNamesCnibench(tok) {
				return true
			}
		}
	}
	return false
}

// argNamesCnibench reports whether one argument token refers to a cnibench
// object: its state directories, a cnb-* netns path, or a value whose last
// path element is cnb* or the cnibench binary itself.
func argNamesCnibench(tok string) bool {
	for _, dir := range []string{"/var/lib/cnibench", "/run/cnibench", "/run/netns/cnb"} {
		if strings.Contains(tok, dir) {
			return true
		}
	}
	if i := strings.LastIndex(tok, "="); i >= 0 {
		tok = tok[i+1:]
	}
	base := path.Base(strings.TrimRight(tok, "/"))
	return strings.HasPrefix(base, "cnb") || base == "cnibench"
}

func splitCmdline(b []byte) []string {
	s := strings.TrimRight(string(b), "\x00")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\x00")
}

// selfAndAncestors returns this process and every ancestor up to init.
func selfAndAncestors() map[int]bool {
	out := map[int]bool{}
	for pid := os.Getpid(); pid > 0 && !out[pid]; {
		out[pid] = true
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			break
		}
		ppid, ok := parseStatPPID(string(b))
		if !ok {
			break
		}
		pid = ppid
	}
	return out
}

// zombie reports whether pid has exited and waits only for its parent to collect its status.
// A zombie holds nothing of a cluster (its memory, mounts, namespaces and sockets are released
// when it exits), and delete counts it as gone: a daemon orphaned by its cnibench process is
// collected by PID 1, which on some hosts does so seconds later, so a snapshot right after a
// delete would otherwise list it.
func zombie(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	state, ok := parseStatField(string(stat), 0)
	return ok && state == "Z"
}

// parseStatPPID extracts the parent PID from /proc/PID/stat. The comm field
// may contain spaces and parentheses, so parsing starts after the last ")".
func parseStatPPID(stat string) (int, bool) {
	f, ok := parseStatField(stat, 1)
	if !ok {
		return 0, false
	}
	ppid, err := strconv.Atoi(f)
	return ppid, err == nil
}

// parseStatField returns field n of /proc/PID/stat counted from the one after comm (0 is the
// state, 1 the parent PID), parsing after the last ")" because comm may hold anything.
func parseStatField(stat string, n int) (string, bool) {
	i := strings.LastIndex(stat, ")")
	if i < 0 {
		return "", false
	}
	f := strings.Fields(stat[i+1:])
	if len(f) <= n {
		return "", false
	}
	return f[n], true
}

// takeBPF records objects pinned under the BPF filesystem; pins outlive
// the programs' loaders, so a CNI agent's leftovers persist there.
func takeBPF(_ context.Context, s *Snapshot) error {
	var names []string
	err := filepath.WalkDir(bpfRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if isGone(err) {
				return nil
			}
			return err
		}
		if p == bpfRoot {
			return nil
		}
		rel, err := filepath.Rel(bpfRoot, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			rel += "/"
		}
		names = append(names, "bpf "+rel)
		return nil
	})
	if err != nil {
		return fmt.Errorf("walk %s: %w", bpfRoot, err)
	}
	s.BPF = names
	return nil
}

// sysctlNames returns root-namespace sysctls that cnibench components are
// known to change: forwarding and bridge netfilter (CNI plugins), rp_filter
// and route_localnet (Cilium, kube-proxy), conntrack size (kube-proxy), the
// kernel/vm values kubelet enforces unless protectKernelDefaults is set,
// and inotify limits that cluster tooling commonly raises.
func sysctlNames() []string {
	return []string{
		"net.ipv4.ip_forward",
		"net.ipv4.conf.all.forwarding",
		"net.ipv6.conf.all.forwarding",
		"net.ipv4.conf.all.rp_filter",
		"net.ipv4.conf.default.rp_filter",
		"net.ipv4.conf.all.route_localnet",
		"net.bridge.bridge-nf-call-iptables",
		"net.bridge.bridge-nf-call-ip6tables",
		"net.bridge.bridge-nf-call-arptables",
		"net.netfilter.nf_conntrack_max",
		"vm.overcommit_memory",
		"vm.panic_on_oom",
		"kernel.panic",
		"kernel.panic_on_oops",
		"kernel.keys.root_maxkeys",
		"kernel.keys.root_maxbytes",
		"fs.inotify.max_user_instances",
		"fs.inotify.max_user_watches",
		// Global socket buffer limits beside the tuning profiles' per-namespace settings.
		"net.core.rmem_max",
		"net.core.wmem_max",
		"net.core.netdev_max_backlog",
	}
}

// sysctlNamesAll is sysctlNames and the tuning profiles' sysctls, as the host's root
// namespace has them: a profile applied to pods must leave the host's values alone.
func sysctlNamesAll() []string { return append(sysctlNames(), tuning.Allowed()...) }

// takeSysctls reads the sysctls of sysctlNames. A missing one (module not
// loaded, feature compiled out) is skipped: it cannot have been changed.
func takeSysctls(_ context.Context, s *Snapshot) error {
	for _, name := range sysctlNamesAll() {
		p := filepath.Join("/proc/sys", strings.ReplaceAll(name, ".", "/"))
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read sysctl %s: %w", name, err)
		}
		s.Sysctls = append(s.Sysctls, "sysctl "+name+"="+collapseSpace(string(b)))
	}
	return nil
}
