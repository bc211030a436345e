package profile

import (
	"math"
	"os"
	"slices"
	"strings"
	"testing"
)

func foldFixture(t *testing.T) Folded {
	t.Helper()
	fh, err := os.Open("testdata/perf-script.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	f, err := FoldPerfScript(fh)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestFoldPerfScript folds perf script's output: root first, the command at the root, offsets
// dropped, kernel frames (modules included) marked, unresolved user frames named by binary and
// a run of them kept once, a padded command name read as one.
func TestFoldPerfScript(t *testing.T) {
	f := foldFixture(t)
	want := map[string]int{
		"dd;read;entry_SYSCALL_64_after_hwframe_[k];do_syscall_64_[k];ksys_read_[k];vfs_read_[k];read_zero_[k]": 2,
		"dd;read;entry_SYSCALL_64_after_hwframe_[k];do_syscall_64_[k]":                                          1,
		"swapper;cpu_startup_entry_[k];do_idle_[k];default_idle_[k];pv_native_safe_halt_[k]":                    1,
		"iperf3;[iperf3];vxlan_xmit_[k];vxlan_xmit_one_[k]":                                                     1,
		"kworker/u4:1-ev;[cni:bad_name];[unknown]_[k]":                                                          1,
		"runc:[2:INIT];read_zero_[k]":                                                                           1,
		"cnibench;[cnibench];read_zero_[k]":                                                                     1,
	}
	if len(f) != len(want) {
		t.Errorf("got %d stacks, want %d:\n%s", len(f), len(want), f)
	}
	for stack, n := range want {
		if f[stack] != n {
			t.Errorf("stack %q: %d samples, want %d\n%s", stack, f[stack], n, f)
		}
	}
	if f.Total() != 8 {
		t.Errorf("total %d, want 8", f.Total())
	}
}

// TestParseRoundTrip reads back what String writes, and names the line of a bad one.
func TestParseRoundTrip(t *testing.T) {
	f := foldFixture(t)
	g, err := Parse("# recorded by a test\n" + f.String())
	if err != nil {
		t.Fatal(err)
	}
	if g.String() != f.String() {
		t.Errorf("round trip:\n%s\nwant\n%s", g, f)
	}
	for _, bad := range []string{"a;b\n", "a;b x\n", "ok 1\na;b -3\n"} {
		if _, err := Parse(bad); err == nil || !strings.Contains(err.Error(), "line") {
			t.Errorf("Parse(%q) = %v, want an error naming the line", bad, err)
		}
	}
}

// TestSummarize leaves the idle loop out, counts a function once per stack however often it
// recurses, and splits self from total.
func TestSummarize(t *testing.T) {
	f := Folded{
		"swapper;cpu_startup_entry_[k];do_idle_[k];default_idle_[k]": 6,
		"iperf3;main;send_[k];send_[k];vxlan_xmit_[k]":               3,
		"iperf3;main;send_[k]":                                       1,
	}
	s := Summarize(f)
	if s.Samples != 10 || s.Busy != 4 {
		t.Fatalf("samples %d busy %d, want 10 and 4", s.Samples, s.Busy)
	}
	if math.Abs(s.Kernel-1) > 1e-12 {
		t.Errorf("kernel share %g, want 1 (every busy leaf is a kernel function)", s.Kernel)
	}
	check := func(name string, self, total float64) {
		t.Helper()
		for _, fn := range s.Funcs {
			if fn.Name == name {
				if math.Abs(fn.Self-self) > 1e-12 || math.Abs(fn.Total-total) > 1e-12 {
					t.Errorf("%s: self %g total %g, want %g and %g", name, fn.Self, fn.Total, self, total)
				}
				return
			}
		}
		t.Errorf("%s missing from %+v", name, s.Funcs)
	}
	check("send_[k]", 0.25, 1)
	check("vxlan_xmit_[k]", 0.75, 0.75)
	check("main", 0, 1)
	if top := s.TopSelf(1); len(top) != 1 || top[0].Name != "vxlan_xmit_[k]" {
		t.Errorf("top self %+v, want vxlan_xmit", top)
	}
	for _, fn := range s.Funcs {
		if fn.Name == "default_idle_[k]" {
			t.Errorf("an idle frame has a busy share: %+v", fn)
		}
	}
}

// TestDiff ranks the functions a configuration adds above those both share.
func TestDiff(t *testing.T) {
	d := Diff(Folded{"iperf3;send_[k];dev_queue_xmit_[k]": 10},
		Folded{"iperf3;send_[k];dev_queue_xmit_[k]": 6, "iperf3;send_[k];vxlan_xmit_[k]": 4}, 3)
	// send is on every stack of both: no difference, last.
	if len(d) != 3 || d[0].Name != "vxlan_xmit_[k]" || math.Abs(d[0].PointsBA-40) > 1e-9 || !d[0].Kernel ||
		d[1].Name != "dev_queue_xmit_[k]" || math.Abs(d[1].PointsBA+40) > 1e-9 || d[2].Name != "send_[k]" {
		t.Errorf("diff %+v, want vxlan_xmit +40 pp (on one side only) before dev_queue_xmit -40 pp (on both)", d)
	}
}

// TestDiffListsEachChainOnce: the frames of one receive path move together and are listed
// once, with the count of those left out, so that smaller differences of other chains (the
// tunnel's transmit) still make the list; functions that share most but not nearly all of
// their samples (write and ip_output: 40 of write's 49 on one side) are listed apart.
func TestDiffListsEachChainOnce(t *testing.T) {
	a := Folded{
		"iperf3;read_[k];sock_read_iter_[k];tcp_recvmsg_[k]": 20,
		"iperf3;write_[k];ip_output_[k]":                     80,
	}
	b := Folded{
		"iperf3;read_[k];sock_read_iter_[k];tcp_recvmsg_[k]": 50,
		"iperf3;read_[k];sock_read_iter_[k]":                 1,
		"iperf3;write_[k];ip_output_[k];vxlan_xmit_[k]":      10,
		"iperf3;write_[k];ip_output_[k]":                     30,
		"iperf3;write_[k];tcp_sendmsg_[k]":                   9,
	}
	// Without the chains, the five largest differences would be ip_output, read,
	// sock_read_iter, tcp_recvmsg and write.
	var got []string
	chain := map[string]int{}
	for _, d := range Diff(a, b, 5) {
		got = append(got, d.Name)
		chain[d.Name] = d.Chain
	}
	want := []string{"ip_output_[k]", "read_[k]", "write_[k]", "vxlan_xmit_[k]", "tcp_sendmsg_[k]"}
	if !slices.Equal(got, want) || chain["read_[k]"] != 2 || chain["ip_output_[k]"] != 0 {
		t.Errorf("diff %v (chains %v), want %v with read's chain of 2 (sock_read_iter, tcp_recvmsg)", got, chain, want)
	}
}
