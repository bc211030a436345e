package hostsnap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// netnsDir is where iproute2 (and cnibench) bind-mount named namespaces.
const netnsDir = "/run/netns"

// takeNetNS records named namespaces, anonymous namespaces kept alive by
// processes (pod sandboxes live in those) and the number of nsfs mounts
// (a namespace pinned by a bind mount outside /run/netns has no name).
func takeNetNS(ctx context.Context, s *Snapshot) error {
	names, err := os.ReadDir(netnsDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", netnsDir, err)
	}
	for _, n := range names {
		s.NetNS = append(s.NetNS, "netns "+n.Name())
	}

	root, err := rootNetNS()
	if err != nil {
		return err
	}
	inodes, err := processNetNS(ctx, root)
	if err != nil {
		return err
	}
	s.NetNSHolders = make(map[string]string, len(inodes))
	for ino, holder := range inodes {
		e := "netns-inode " + ino
		s.NetNS = append(s.NetNS, e)
		s.NetNSHolders[e] = holder
	}

	mounts, err := readMountinfo()
	if err != nil {
		return err
	}
	n := 0
	for _, m := range mounts {
		if m.fstype == "nsfs" {
			n++
		}
	}
	s.NetNS = append(s.NetNS, fmt.Sprintf("nsfs-mounts %d", n))
	return nil
}

// rootNetNS returns the "net:[INODE]" link of the host namespace. PID 1 is
// the reference, but a hardened or non-dumpable init refuses even root; the
// kernel threads (children of kthreadd, PID 2) always live in the initial
// namespace, and as a last resort the caller's own namespace is used since
// cnibench and its tests run in the root namespace.
func rootNetNS() (string, error) {
	var errs []error
	for _, pid := range []string{"1", "2", "self"} {
		if pid == "2" {
			if comm, err := os.ReadFile("/proc/2/comm"); err != nil || strings.TrimSpace(string(comm)) != "kthreadd" {
				continue
			}
		}
		link, err := os.Readlink("/proc/" + pid + "/ns/net")
		if err == nil {
			return link, nil
		}
		errs = append(errs, err)
	}
	return "", fmt.Errorf("read root network namespace: %w", errors.Join(errs...))
}

// processNetNS maps the inode of every network namespace other than root
// that some task is in to a description of the lowest-numbered holder.
// Threads are checked individually because a thread can setns() on its own
// (CNI plugins written in Go do exactly that).
func processNetNS(ctx context.Context, root string) (map[string]string, error) {
	pids, err := listPIDs()
	if err != nil {
		return nil, err
	}
	out := make(map[string]string)
	for _, pid := range pids {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			// The process exited between listing and reading.
			if isUnreadable(err) {
				continue
			}
			return nil, fmt.Errorf("list tasks of pid %d: %w", pid, err)
		}
		for _, t := range tasks {
			link, err := os.Readlink(fmt.Sprintf("/proc/%d/task/%s/ns/net", pid, t.Name()))
			if err != nil {
				// Exited tasks and zombies have no namespace links.
				if isUnreadable(err) {
					continue
				}
				return nil, fmt.Errorf("read network namespace of pid %d: %w", pid, err)
			}
			if link == root {
				continue
			}
			ino := strings.TrimSuffix(strings.TrimPrefix(link, "net:["), "]")
			if _, seen := out[ino]; !seen {
				out[ino] = fmt.Sprintf("pid %d %s", pid, readComm(pid))
			}
		}
	}
	return out, nil
}

// listPIDs returns the numeric entries of /proc in ascending order, which
// makes "lowest holder" descriptions deterministic.
func listPIDs() ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list /proc: %w", err)
	}
	var pids []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	sort.Ints(pids)
	return pids, nil
}

// isGone reports errors that mean a /proc entry vanished under us, which is
// normal on a busy host and not a failure of the snapshot.
func isGone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH)
}

// isUnreadable reports /proc entries that vanished or that even root may
// not inspect (a non-dumpable supervisor under Yama or a sandbox). Such
// processes are not cnibench's: everything cnibench starts is inspectable.
func isUnreadable(err error) bool {
	return isGone(err) || errors.Is(err, fs.ErrPermission)
}

func readComm(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}

// ipLink is the subset of `ip -d -j link` output that identifies a link.
type ipLink struct {
	IfName   string `json:"ifname"`
	Master   string `json:"master"`
	LinkInfo *struct {
		InfoKind string `json:"info_kind"`
	} `json:"linkinfo"`
	AddrInfo []struct {
		Family    string `json:"family"`
		Local     string `json:"local"`
		PrefixLen int    `json:"prefixlen"`
		Temporary bool   `json:"temporary"`
	} `json:"addr_info"`
}

func takeLinks(ctx context.Context, s *Snapshot) error {
	out, err := run(ctx, "ip", "-d", "-j", "link", "show")
	if err != nil {
		return err
	}
	links, err := parseLinks(out)
	if err != nil {
		return err
	}
	s.Links = links
	return nil
}

// parseLinks turns `ip -d -j link show` output into "link NAME (KIND)"
// entries. Interface indexes and state flags are left out: they change
// without the link being a different object.
func parseLinks(out []byte) ([]string, error) {
	var links []ipLink
	if err := json.Unmarshal(out, &links); err != nil {
		return nil, fmt.Errorf("parse ip link json: %w", err)
	}
	var entries []string
	for _, l := range links {
		kind := "device"
		if l.LinkInfo != nil && l.LinkInfo.InfoKind != "" {
			kind = l.LinkInfo.InfoKind
		}
		e := fmt.Sprintf("link %s (%s)", l.IfName, kind)
		if l.Master != "" {
			e += " master " + l.Master
		}
		entries = append(entries, e)
	}
	return entries, nil
}

func takeAddrs(ctx context.Context, s *Snapshot) error {
	out, err := run(ctx, "ip", "-j", "addr", "show")
	if err != nil {
		return err
	}
	addrs, err := parseAddrs(out)
	if err != nil {
		return err
	}
	s.Addrs = addrs
	return nil
}

// parseAddrs turns `ip -j addr show` output into "addr IFNAME ADDR/LEN"
// entries. IPv6 privacy (temporary) addresses rotate on their own, so they
// are skipped; lifetimes are dropped for the same reason.
func parseAddrs(out []byte) ([]string, error) {
	var links []ipLink
	if err := json.Unmarshal(out, &links); err != nil {
		return nil, fmt.Errorf("parse ip addr json: %w", err)
	}
	var entries []string
	for _, l := range links {
		for _, a := range l.AddrInfo {
			if a.Temporary {
				continue
			}
			entries = append(entries, fmt.Sprintf("addr %s %s/%d", l.IfName, a.Local, a.PrefixLen))
		}
	}
	return entries, nil
}

func takeRoutes(ctx context.Context, s *Snapshot) error {
	for _, fam := range []struct{ flag, prefix string }{{"-4", "route"}, {"-6", "route6"}} {
		out, err := run(ctx, "ip", fam.flag, "route", "show", "table", "all")
		if err != nil {
			return err
		}
		s.Routes = append(s.Routes, parseRoutes(string(out), fam.prefix)...)
	}
	return nil
}

// parseRoutes normalizes `ip route show` text. Multipath next hops are
// printed on continuation lines and are folded into their route; "expires"
// counts down and "linkdown" follows carrier, so both are dropped.
func parseRoutes(out, prefix string) []string {
	var routes []string
	for _, line := range strings.Split(out, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		if (line[0] == ' ' || line[0] == '\t') && len(routes) > 0 {
			routes[len(routes)-1] += " " + strings.TrimSpace(line)
			continue
		}
		routes = append(routes, line)
	}
	entries := make([]string, 0, len(routes))
	for _, r := range routes {
		f := strings.Fields(r)
		if len(f) > 0 && f[0] == "cache" {
			continue
		}
		var kept []string
		for i := 0; i < len(f); i++ {
			switch f[i] {
			case "expires":
				i++ // skip the value too
			case "linkdown":
			default:
				kept = append(kept, f[i])
			}
		}
		entries = append(entries, prefix+" "+strings.Join(kept, " "))
	}
	return entries
}

func takeRules(ctx context.Context, s *Snapshot) error {
	for _, fam := range []struct{ flag, prefix string }{{"-4", "rule"}, {"-6", "rule6"}} {
		out, err := run(ctx, "ip", fam.flag, "rule", "show")
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(out), "\n") {
			if l := collapseSpace(line); l != "" {
				s.Rules = append(s.Rules, fam.prefix+" "+l)
			}
		}
	}
	return nil
}

// ipNeigh is the subset of `ip -j neigh show` output that identifies an entry.
type ipNeigh struct {
	Dst   string    `json:"dst"`
	Dev   string    `json:"dev"`
	State []string  `json:"state"`
	Proxy *struct{} `json:"proxy"`
}

func takeNeighbours(ctx context.Context, s *Snapshot) error {
	for _, args := range [][]string{{"-j", "neigh", "show"}, {"-j", "neigh", "show", "proxy"}} {
		for _, fam := range []string{"-4", "-6"} {
			out, err := run(ctx, "ip", append([]string{fam}, args...)...)
			if err != nil {
				return err
			}
			entries, err := parseNeighbours(out, len(args) == 4)
			if err != nil {
				return err
			}
			s.Neighbours = append(s.Neighbours, entries...)
		}
	}
	return nil
}

// parseNeighbours turns `ip -j neigh show [proxy]` output into "neigh DEV ADDR" entries for
// the ones a program put there (permanent, proxy) and any for a lab address. The state of a
// learned entry is left out: it changes on its own.
func parseNeighbours(out []byte, proxy bool) ([]string, error) {
	var list []ipNeigh
	if err := json.Unmarshal(out, &list); err != nil {
		return nil, fmt.Errorf("parse ip neigh json: %w", err)
	}
	var entries []string
	for _, n := range list {
		switch {
		case proxy:
			entries = append(entries, "neigh-proxy "+n.Dev+" "+n.Dst)
		case slices.Contains(n.State, "PERMANENT"):
			entries = append(entries, "neigh "+n.Dev+" "+n.Dst+" permanent")
		case labAddress(n.Dst):
			entries = append(entries, "neigh "+n.Dev+" "+n.Dst)
		}
	}
	return entries, nil
}

// labAddress reports whether an address lies in the ranges cnibench's clusters take.
func labAddress(s string) bool {
	ip, err := netip.ParseAddr(s)
	if err != nil {
		return false
	}
	if ip.Is4() {
		b := ip.As4()
		return b[0] == 10 && b[1] >= 200 && b[1] <= 254
	}
	return netip.MustParsePrefix("fdcb::/16").Contains(ip)
}
