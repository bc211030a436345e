package hostsnap

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestDiffEqualIsEmpty(t *testing.T) {
	a := Snapshot{
		Links:  []string{"link eth0 (device)", "link lo (device)"},
		Routes: []string{"route default via 192.0.2.1 dev eth0"},
	}
	// Same content in a different order must still compare equal, so that
	// hand-built or merged snapshots need not be pre-sorted.
	b := Snapshot{
		Links:  []string{"link lo (device)", "link eth0 (device)"},
		Routes: []string{"route default via 192.0.2.1 dev eth0"},
	}
	if d := Diff(a, b); len(d) != 0 {
		t.Fatalf("Diff of equal snapshots = %q, want empty", d)
	}
	if d := Diff(Snapshot{}, Snapshot{}); d != nil {
		t.Fatalf("Diff of zero snapshots = %q, want nil", d)
	}
}

func TestDiffReportsEachCategory(t *testing.T) {
	before := Snapshot{
		Links:    []string{"link eth0 (device)", "link old0 (dummy)"},
		Firewall: []string{"nft table inet cnbhs (sha256:aaaaaaaaaaaa)"},
		Sysctls:  []string{"sysctl net.ipv4.ip_forward=0"},
	}
	after := Snapshot{
		NetNS:        []string{"netns cnb-c1-n1", "netns-inode 4026532300"},
		Links:        []string{"link cnb-x (veth)", "link eth0 (device)"},
		Routes:       []string{"route unreachable 10.255.77.0/24"},
		Firewall:     []string{"nft table inet cnbhs (sha256:bbbbbbbbbbbb)"},
		Mounts:       []string{"mount /run/netns/cnb-c1-n1 nsfs"},
		Cgroups:      []string{"cgroup pids/cnb-c1"},
		Processes:    []string{"process etcd: etcd --data-dir /var/lib/cnibench/c1"},
		BPF:          []string{"bpf tc/"},
		Sysctls:      []string{"sysctl net.ipv4.ip_forward=1"},
		NetNSHolders: map[string]string{"netns-inode 4026532300": "pid 42 pause"},
	}
	want := []string{
		"+ netns cnb-c1-n1",
		"+ netns-inode 4026532300 (held by pid 42 pause)",
		"- link old0 (dummy)",
		"+ link cnb-x (veth)",
		"+ route unreachable 10.255.77.0/24",
		"- nft table inet cnbhs (sha256:aaaaaaaaaaaa)",
		"+ nft table inet cnbhs (sha256:bbbbbbbbbbbb)",
		"+ mount /run/netns/cnb-c1-n1 nsfs",
		"+ cgroup pids/cnb-c1",
		"+ process etcd: etcd --data-dir /var/lib/cnibench/c1",
		"+ bpf tc/",
		"- sysctl net.ipv4.ip_forward=0",
		"+ sysctl net.ipv4.ip_forward=1",
	}
	if got := Diff(before, after); !reflect.DeepEqual(got, want) {
		t.Fatalf("Diff =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Reversing the arguments swaps the signs; the holder note follows the
	// snapshot that actually contains the namespace.
	rev := Diff(after, before)
	if !contains(rev, "- netns-inode 4026532300 (held by pid 42 pause)") || !contains(rev, "+ link old0 (dummy)") {
		t.Fatalf("reverse Diff = %q", rev)
	}
}

func TestNormalizeNumbersDuplicates(t *testing.T) {
	got := normalize([]string{"mount /x tmpfs", "mount /a ext4", "mount /x tmpfs", "mount /x tmpfs"})
	want := []string{"mount /a ext4", "mount /x tmpfs", "mount /x tmpfs #2", "mount /x tmpfs #3"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("normalize = %q, want %q", got, want)
	}
	// A mount stacked a second time must be visible as a difference.
	if d := Diff(Snapshot{Mounts: normalize(want[:2])}, Snapshot{Mounts: normalize(want[:3])}); !reflect.DeepEqual(d, []string{"+ mount /x tmpfs #2"}) {
		t.Fatalf("Diff of stacked mount = %q", d)
	}
}

func TestParseRoutes(t *testing.T) {
	out := "default via 192.0.2.1 dev eth0 proto dhcp metric 100 expires 3599sec\n" +
		"10.0.0.0/8 proto static\n" +
		"\tnexthop via 192.0.2.5 dev eth0 weight 1\n" +
		"\tnexthop via 192.0.2.6 dev eth0 weight 1 linkdown\n" +
		"unreachable 10.255.77.0/24\n" +
		"cache\n" +
		"\n"
	got := parseRoutes(out, "route")
	want := []string{
		"route default via 192.0.2.1 dev eth0 proto dhcp metric 100",
		"route 10.0.0.0/8 proto static nexthop via 192.0.2.5 dev eth0 weight 1 nexthop via 192.0.2.6 dev eth0 weight 1",
		"route unreachable 10.255.77.0/24",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parseRoutes =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestParseNftTables(t *testing.T) {
	ruleset := "table inet cnbhs {\n\tchain c {\n\t\tcounter accept\n\t}\n}\ntable ip nat {\n}\n"
	got := parseNftTables(ruleset)
	if len(got) != 2 || !strings.HasPrefix(got[0], "nft table inet cnbhs (sha256:") || !strings.HasPrefix(got[1], "nft table ip nat (sha256:") {
		t.Fatalf("parseNftTables = %q", got)
	}
	// Indentation differences between nft versions must not change the hash.
	reindented := strings.ReplaceAll(ruleset, "\t", "    ")
	if again := parseNftTables(reindented); !reflect.DeepEqual(again, got) {
		t.Fatalf("reindented ruleset hashed differently: %q vs %q", again, got)
	}
	// A changed rule must change the table's entry.
	changed := parseNftTables(strings.Replace(ruleset, "accept", "drop", 1))
	if changed[0] == got[0] || changed[1] != got[1] {
		t.Fatalf("changed rule: got %q, before %q", changed, got)
	}
	if got := parseNftTables(""); got != nil {
		t.Fatalf("empty ruleset = %q", got)
	}
}

func TestParseIptablesSave(t *testing.T) {
	out := "# Generated by iptables-nft-save v1.8.9 on Sat Nov 21 12:03:40 2026\n" +
		"*filter\n" +
		":INPUT ACCEPT [12:3400]\n" +
		":CNB-FWD - [0:0]\n" +
		"[5:300] -A INPUT -m comment --comment \"[1:2] keep\" -j ACCEPT\n" +
		"-A FORWARD -j CNB-FWD\n" +
		"COMMIT\n" +
		"# Completed on Sat Nov 21 12:03:40 2026\n" +
		"*nat\n" +
		":POSTROUTING ACCEPT [0:0]\n" +
		"COMMIT\n"
	got := parseIptablesSave(out, "iptables-nft")
	want := []string{
		"iptables-nft filter :INPUT ACCEPT",
		"iptables-nft filter :CNB-FWD -",
		"iptables-nft filter -A INPUT -m comment --comment \"[1:2] keep\" -j ACCEPT",
		"iptables-nft filter -A FORWARD -j CNB-FWD",
		"iptables-nft nat :POSTROUTING ACCEPT",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parseIptablesSave =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestParseMountinfo(t *testing.T) {
	text := "22 1 0:21 / /sys rw,nosuid - sysfs sysfs rw\n" +
		"30 22 0:26 / /sys/fs/cgroup ro shared:9 master:2 - tmpfs tmpfs ro,mode=755\n" +
		"812 31 0:4 net:[4026532300] /run/netns/cnb-c1-n1 rw shared:300 - nsfs nsfs rw\n"
	got, err := parseMountinfo(text)
	if err != nil {
		t.Fatal(err)
	}
	want := []mountEntry{{"/sys", "sysfs"}, {"/sys/fs/cgroup", "tmpfs"}, {"/run/netns/cnb-c1-n1", "nsfs"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parseMountinfo = %+v, want %+v", got, want)
	}
	if _, err := parseMountinfo("garbage line\n"); err == nil {
		t.Fatal("parseMountinfo accepted a malformed line")
	}
}

func TestParseLinksAndAddrs(t *testing.T) {
	out := []byte(`[{"ifindex":1,"ifname":"lo","addr_info":[{"family":"inet","local":"127.0.0.1","prefixlen":8}]},
{"ifindex":7,"ifname":"cnb-x","master":"cnb-br","linkinfo":{"info_kind":"veth"},
 "addr_info":[{"family":"inet6","local":"2001:db8::1","prefixlen":64},
              {"family":"inet6","local":"2001:db8::abcd","prefixlen":64,"temporary":true}]}]`)
	links, err := parseLinks(out)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"link lo (device)", "link cnb-x (veth) master cnb-br"}; !reflect.DeepEqual(links, want) {
		t.Fatalf("parseLinks = %q, want %q", links, want)
	}
	addrs, err := parseAddrs(out)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"addr lo 127.0.0.1/8", "addr cnb-x 2001:db8::1/64"}; !reflect.DeepEqual(addrs, want) {
		t.Fatalf("parseAddrs = %q, want %q", addrs, want)
	}
	if _, err := parseLinks([]byte("not json")); err == nil {
		t.Fatal("parseLinks accepted invalid JSON")
	}
}

func TestParseNeighbours(t *testing.T) {
	out := []byte(`[{"dst":"192.0.2.1","dev":"eth0","lladdr":"52:54:00:12:34:56","state":["REACHABLE"]},
{"dst":"10.200.0.1","dev":"cnb-a","lladdr":"aa:bb:cc:dd:ee:ff","state":["STALE"]},
{"dst":"fdcb:0:200::1","dev":"cnb-a","state":["FAILED"]},
{"dst":"2001:db8::1","dev":"eth0","lladdr":"52:54:00:12:34:56","router":null,"state":["PERMANENT"]}]`)
	got, err := parseNeighbours(out, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"neigh cnb-a 10.200.0.1", "neigh cnb-a fdcb:0:200::1", "neigh eth0 2001:db8::1 permanent"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parseNeighbours = %q, want %q", got, want)
	}
	proxy, err := parseNeighbours([]byte(`[{"dst":"fd00::5","dev":"eth0","proxy":null}]`), true)
	if err != nil || !reflect.DeepEqual(proxy, []string{"neigh-proxy eth0 fd00::5"}) {
		t.Fatalf("proxy entries = %q, %v", proxy, err)
	}
	if _, err := parseNeighbours([]byte("nope"), false); err == nil {
		t.Fatal("parseNeighbours accepted invalid JSON")
	}
}

func TestProcessMatching(t *testing.T) {
	daemons, toolchain := daemonNames(), toolchainNames()
	cases := []struct {
		name string
		p    procInfo
		want bool
	}{
		{"daemon by comm", procInfo{comm: "etcd", args: []string{"/opt/bin/etcd", "--name", "x"}}, true},
		{"truncated comm", procInfo{comm: "containerd-shim", args: []string{"/usr/bin/containerd-shim-runc-v2", "-namespace", "k8s.io"}}, true},
		{"truncated comm of kube-controller-manager", procInfo{comm: "kube-controller"}, true},
		{"container in cnb cgroup", procInfo{comm: "nginx", args: []string{"nginx"}, cgroup: "8:pids:/cnb-c1/kubepods/pod1/abc\n0::/\n"}, true},
		{"host cgroup", procInfo{comm: "nginx", args: []string{"nginx"}, cgroup: "8:pids:/system.slice/nginx.service\n"}, false},
		{"cnibench binary", procInfo{comm: "cnibench", args: []string{"./bin/cnibench", "cluster", "delete"}}, true},
		{"state dir argument", procInfo{comm: "sh", args: []string{"sh", "-c", "tail -f /var/lib/cnibench/c1/log"}}, true},
		{"netns path argument", procInfo{comm: "nsenter", args: []string{"nsenter", "--net=/run/netns/cnb-c1-n1", "sh"}}, true},
		{"cnb argument", procInfo{comm: "sleep", args: []string{"cnbhs-sleep", "600"}}, true},
		{"checkout path in editor", procInfo{comm: "vim", args: []string{"vim", "/src/cnibench/internal/hostsnap/net.go"}}, false},
		{"compiler of cnibench package", procInfo{comm: "compile", args: []string{"/usr/local/go/pkg/tool/linux_amd64/compile", "-p", "github.com/cnibench/cnibench"}}, false},
		{"go build of cnibench", procInfo{comm: "go", args: []string{"go", "build", "-o", "bin/cnibench", "./cmd/cnibench"}}, false},
		{"test binary of another package", procInfo{comm: "cnibench.test", args: []string{"/tmp/go-build1/b001/cnibench.test", "-test.v"}}, false},
		{"unrelated", procInfo{comm: "bash", args: []string{"-bash"}}, false},
		{"kernel thread", procInfo{comm: "kworker/0:1", cgroup: "0::/\n"}, false},
	}
	for _, c := range cases {
		if got := c.p.matches(daemons, toolchain); got != c.want {
			t.Errorf("%s: matches = %v, want %v", c.name, got, c.want)
		}
	}
	if got := (procInfo{comm: "sleep", args: []string{"cnbhs-sleep", "600"}}).entry(); got != "process sleep: cnbhs-sleep 600" {
		t.Errorf("entry = %q", got)
	}
	if got := (procInfo{comm: "pause"}).entry(); got != "process pause: [no cmdline]" {
		t.Errorf("entry without cmdline = %q", got)
	}
}

// TestSnapshotSkipsZombies leaves an exited child named like a cluster daemon unreaped: a
// zombie holds nothing of a cluster, so the snapshot must not list it, while the same binary
// alive is listed.
func TestSnapshotSkipsZombies(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "kube-apiserver")
	if err := os.Symlink("/bin/sleep", bin); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	// Entries name no pid: the live child is told apart by its command line, and no zombie
	// kube-apiserver (without one) may be listed at all.
	listed := func(entry string) bool {
		var s Snapshot
		if err := takeProcesses(context.Background(), &s); err != nil {
			t.Fatal(err)
		}
		return slices.Contains(s.Processes, entry)
	}
	// The kernel renames the child (comm) late in exec, after Start has returned.
	deadline := time.Now().Add(10 * time.Second)
	for !listed("process kube-apiserver: " + bin + " 30") {
		if time.Now().After(deadline) {
			t.Fatal("a live kube-apiserver is not listed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Killed and not waited for: a zombie until cmd.Wait, which the deferred call does.
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for !zombie(cmd.Process.Pid) {
		if time.Now().After(deadline) {
			t.Fatal("the killed child never became a zombie")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if listed("process kube-apiserver: [no cmdline]") {
		t.Error("a zombie kube-apiserver is listed")
	}
}

func TestParseStatPPID(t *testing.T) {
	// A comm containing ") " must not shift the fields.
	ppid, ok := parseStatPPID("1234 (we) ird (x) S 77 1234 1234 0 -1 4194560")
	if !ok || ppid != 77 {
		t.Fatalf("parseStatPPID = %d, %v; want 77, true", ppid, ok)
	}
	if _, ok := parseStatPPID("garbage"); ok {
		t.Fatal("parseStatPPID accepted garbage")
	}
}

func TestSelfAndAncestorsIncludesSelf(t *testing.T) {
	if !selfAndAncestors()[os.Getpid()] {
		t.Fatal("selfAndAncestors does not contain the current process")
	}
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// TestParseBPFNet reads bpftool's JSON as this host's bpftool writes it: tc attachments by
// link, hook and name without the program's ID, XDP by its mode, empty hooks and hooks of
// other shapes ignored.
func TestParseBPFNet(t *testing.T) {
	out := []byte(`[{"xdp":[{"devname":"cnb-x","ifindex":9,"mode":"driver","id":7,"name":"xdp_prog:[7]"}],` +
		`"tc":[{"devname":"eth0","ifindex":2,"kind":"clsact/ingress","name":"cali_tc_preambl:[21627]","id":21627},` +
		`{"devname":"eth0","ifindex":2,"kind":"tcx/egress","name":"cil_to_netdev","prog_id":5}],"flow_dissector":[]}]`)
	got, err := parseBPFNet(out)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	want := []string{"link-bpf cnb-x xdp driver xdp_prog", "link-bpf eth0 tc clsact/ingress cali_tc_preambl", "link-bpf eth0 tc tcx/egress cil_to_netdev"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if _, err := parseBPFNet([]byte("Error: not JSON")); err == nil || !strings.Contains(err.Error(), "bpftool net show") {
		t.Errorf("bad output: %v", err)
	}
}
