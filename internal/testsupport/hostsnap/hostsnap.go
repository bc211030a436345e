// Package hostsnap records the host-level objects a cnibench cluster could
// leave behind (namespaces, links, routes, firewall rules, mounts, cgroups,
// processes, BPF objects pinned or attached to the host, sysctls) so tests can prove that
// `cluster delete` restores the host to the state it had before `create`.
//
// A Snapshot is a set of normalized, human-readable entries per category;
// comparing two snapshots is plain set difference, so entries deliberately
// omit anything that changes on an idle host (counters, lifetimes, PIDs).
package hostsnap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// execTimeout bounds each external command so a wedged netlink dump or a
// hung nft cannot stall a whole test run.
const execTimeout = 30 * time.Second

// Snapshot is the recorded host state. Every category is a sorted list of
// normalized entries; identical entries within a category are numbered
// ("#2", "#3") so that stacking a second identical object still shows up.
type Snapshot struct {
	// NetNS holds named namespaces under /run/netns, inodes of network
	// namespaces held by processes other than the root one, and the number
	// of nsfs mounts.
	NetNS []string
	// Links holds root-namespace links with their kind and master.
	Links []string
	// Addrs holds addresses on root-namespace links.
	Addrs []string
	// Routes holds IPv4 and IPv6 routes of every table in the root namespace.
	Routes []string
	// Rules holds IPv4 and IPv6 policy routing rules.
	Rules []string
	// Neighbours holds the root namespace's permanent and proxy ARP and NDP entries, and any
	// entry for an address in the lab's ranges (10.200.0.0-10.254.255.255, fdcb::/16).
	Neighbours []string
	// Firewall holds nftables tables (with a content hash) and
	// iptables-legacy / iptables-nft rules of the root namespace.
	Firewall []string
	// Mounts holds mount points with their filesystem type.
	Mounts []string
	// Cgroups holds top-level cgroups of every hierarchy plus every cgroup
	// (recursively) whose name starts with "cnb".
	Cgroups []string
	// Processes holds cnibench-related processes as "comm: cmdline".
	Processes []string
	// BPF holds objects pinned under /sys/fs/bpf, programs attached to the host's cgroup2
	// root, and programs attached to the root namespace's links.
	BPF []string
	// Files lists fixed host paths that Kubernetes components, runtimes and CNIs write to
	// whatever they are told (/var/log/containers, /var/lib/kubelet, /run/containerd ...):
	// whether each exists, and what it holds.
	Files []string
	// Sysctls holds root-namespace sysctls cnibench or its components might
	// change, as "name=value".
	Sysctls []string

	// NetNSHolders maps a namespace-inode entry of NetNS to a description
	// of one process holding it. It only annotates Diff output and is not
	// compared, because which process holds a namespace is incidental.
	NetNSHolders map[string]string
}

// category pairs a Snapshot field with its name for iteration; it exists so
// Diff and Take handle every field without repeating the field list.
type category struct {
	name    string
	entries *[]string
}

func (s *Snapshot) categories() []category {
	return []category{
		{"netns", &s.NetNS},
		{"links", &s.Links},
		{"addrs", &s.Addrs},
		{"routes", &s.Routes},
		{"rules", &s.Rules},
		{"neighbours", &s.Neighbours},
		{"firewall", &s.Firewall},
		{"mounts", &s.Mounts},
		{"cgroups", &s.Cgroups},
		{"processes", &s.Processes},
		{"bpf", &s.BPF},
		{"sysctls", &s.Sysctls},
		{"files", &s.Files},
	}
}

// Take records the host objects a cnibench cluster could leave behind.
// It must run as root: most sources (other processes' namespaces, nft,
// cgroup trees) are not readable otherwise.
func Take(ctx context.Context) (Snapshot, error) {
	var s Snapshot
	steps := []struct {
		name string
		fn   func(context.Context, *Snapshot) error
	}{
		{"network namespaces", takeNetNS},
		{"links", takeLinks},
		{"addresses", takeAddrs},
		{"routes", takeRoutes},
		{"rules", takeRules},
		{"neighbours", takeNeighbours},
		{"firewall", takeFirewall},
		{"mounts", takeMounts},
		{"cgroups", takeCgroups},
		{"bpf", takeBPF},
		{"cgroup bpf", takeCgroupBPF},
		{"link bpf", takeLinkBPF},
		{"sysctls", takeSysctls},
		{"files", takeFiles},
		// Processes go last: every helper command started above has been
		// waited for by then, so none of them can show up as a process.
		{"processes", takeProcesses},
	}
	for _, st := range steps {
		if err := ctx.Err(); err != nil {
			return Snapshot{}, fmt.Errorf("hostsnap: %s: %w", st.name, err)
		}
		if err := st.fn(ctx, &s); err != nil {
			return Snapshot{}, fmt.Errorf("hostsnap: %s: %w", st.name, err)
		}
	}
	for _, c := range s.categories() {
		*c.entries = normalize(*c.entries)
	}
	return s, nil
}

// Diff returns human-readable differences, one line per entry that
// disappeared ("- ...") or appeared ("+ ..."), grouped by category in a
// fixed order. It returns nil when the snapshots are equal.
func Diff(before, after Snapshot) []string {
	var out []string
	bc, ac := before.categories(), after.categories()
	for i := range bc {
		removed, added := setDiff(*bc[i].entries, *ac[i].entries)
		for _, e := range removed {
			out = append(out, "- "+e+holderNote(before.NetNSHolders, e))
		}
		for _, e := range added {
			out = append(out, "+ "+e+holderNote(after.NetNSHolders, e))
		}
	}
	return out
}

func holderNote(holders map[string]string, entry string) string {
	if h, ok := holders[entry]; ok && h != "" {
		return " (held by " + h + ")"
	}
	return ""
}

// setDiff returns entries only in a and entries only in b, each sorted.
// Inputs need not be sorted, which keeps Diff correct for hand-built
// snapshots too.
func setDiff(a, b []string) (onlyA, onlyB []string) {
	inA := make(map[string]bool, len(a))
	for _, e := range a {
		inA[e] = true
	}
	inB := make(map[string]bool, len(b))
	for _, e := range b {
		inB[e] = true
	}
	for e := range inA {
		if !inB[e] {
			onlyA = append(onlyA, e)
		}
	}
	for e := range inB {
		if !inA[e] {
			onlyB = append(onlyB, e)
		}
	}
	sort.Strings(onlyA)
	sort.Strings(onlyB)
	return onlyA, onlyB
}

// normalize sorts entries and numbers repeats, turning a multiset into a set
// so that set difference still notices a duplicated object (a second
// identical mount stacked on the same point, a second identical process).
func normalize(entries []string) []string {
	if len(entries) == 0 {
		return nil
	}
	sorted := append([]string(nil), entries...)
	sort.Strings(sorted)
	out := make([]string, 0, len(sorted))
	n := 0
	for i, e := range sorted {
		if i > 0 && e == sorted[i-1] {
			n++
			out = append(out, fmt.Sprintf("%s #%d", e, n))
			continue
		}
		n = 1
		out = append(out, e)
	}
	return out
}

// lookTool finds an administration binary. Non-login root shells and CI
// runners often lack /usr/sbin in PATH, so the usual sbin directories are
// tried as well. It returns "" when the tool is not installed.
func lookTool(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/sbin", "/sbin", "/usr/bin", "/bin"} {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// notInstalledError marks a missing tool so callers of optional tools can
// record it instead of failing. It is a type rather than a sentinel variable
// to keep the package free of mutable globals.
type notInstalledError struct{ tool string }

func (e notInstalledError) Error() string { return e.tool + ": not installed" }

func isNotInstalled(err error) bool {
	var ni notInstalledError
	return errors.As(err, &ni)
}

// run executes a tool with a per-command timeout and returns its stdout.
// The C locale keeps output parseable regardless of the caller's locale.
func run(ctx context.Context, tool string, args ...string) ([]byte, error) {
	path := lookTool(tool)
	if path == "" {
		return nil, notInstalledError{tool: tool}
	}
	ctx, cancel := context.WithTimeout(ctx, execTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	// A grandchild keeping stdout open must not block Wait forever.
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("run %s %s: %w: %s", tool, strings.Join(args, " "), err,
			strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// collapseSpace joins whitespace runs into single spaces, so tabs and
// alignment padding in tool output do not make equal objects look different.
func collapseSpace(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
