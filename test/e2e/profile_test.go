//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/profile"
)

// encapsulating are the datapaths whose cross-node packets go through the kernel's VXLAN
// device; the others route them (flannel host-gw, Cilium native routing) or bridge them.
var encapsulating = []string{"flannel-vxlan", "cilium-vxlan", "calico-vxlan", "canal"}

// withoutEmulator drops the stacks of QEMU's emulator: the profile covers every CPU, and
// scripts/test.sh runs its cgroup v2 VM beside these tests, whose emulation held about half
// of the busy samples of a run it overlapped (flannel-vxlan's VXLAN share 1.8 %, and 4.9 %
// with the emulator left out). It is not the datapath's work, which the shares are about.
func withoutEmulator(f profile.Folded) profile.Folded {
	out := profile.Folded{}
	for stack, n := range f {
		if !strings.HasPrefix(stack, "qemu-system-") {
			out[stack] = n
		}
	}
	return out
}

// checkProfiles reads back the CPU profiles of a run made with --profile: every measured
// sample carries one; on cross-node tcp-stream the kernel's VXLAN functions hold a share of
// the busy samples on the encapsulating datapaths and none to speak of on the routed ones; the
// verdict's document names a VXLAN device function among what differs from the first target
// (in full-13: gro_cell_poll +5.3 pp second, vxlan_xmit outside the first six); the HTML
// report and `results flamegraph` draw vxlan_xmit.
func checkProfiles(ctx context.Context, t *testing.T, results string, dps []string, profiles []jsonProfile) {
	t.Helper()
	run, samples := onlyRun(ctx, t, results, "profiled run")
	merged := map[string]profile.Folded{}
	for _, s := range samples {
		if s.Warmup || s.Path == "setup" || s.Error != "" {
			continue
		}
		if !strings.HasPrefix(s.Profile, "# perf record") {
			t.Errorf("sample %d (%s %s %s) has no profile: %.200q", s.Seq, s.Target, s.Path, s.Workload, s.Profile)
			continue
		}
		if s.Path != "cross-node" || s.Workload != "tcp-stream/1" {
			continue
		}
		f, err := profile.Parse(s.Profile)
		if err != nil {
			t.Fatal(err)
		}
		if merged[s.Target] == nil {
			merged[s.Target] = profile.Folded{}
		}
		merged[s.Target].Add(withoutEmulator(f))
	}
	for _, dp := range dps {
		sum := profile.Summarize(merged[dp])
		vxlan, fn := 0.0, ""
		for _, f := range sum.Funcs {
			if strings.HasPrefix(f.Name, "vxlan_") && f.Total > vxlan {
				vxlan, fn = f.Total, f.Name
			}
		}
		t.Logf("%s: %d busy samples, %.0f %% kernel, largest VXLAN share %.1f %% (%s)", dp, sum.Busy, 100*sum.Kernel, 100*vxlan, fn)
		switch {
		case sum.Busy < 200:
			t.Errorf("%s: %d busy samples over two 1 s windows", dp, sum.Busy)
		case slices.Contains(encapsulating, dp) && vxlan < 0.02:
			t.Errorf("%s encapsulates, yet its VXLAN functions hold %.1f %% of the busy samples", dp, 100*vxlan)
		case !slices.Contains(encapsulating, dp) && vxlan > 0.005:
			t.Errorf("%s does not encapsulate, yet %s holds %.1f %% of the busy samples", dp, fn, 100*vxlan)
		}
	}
	named := false
	for _, p := range profiles {
		if p.Target == "flannel-vxlan" && p.Path == "cross-node" && p.Workload == "tcp-stream/1" && p.Versus.Target == dps[0] {
			for _, d := range p.Versus.Deltas {
				named = named || (vxlanFunction(d.Function) && d.Points > 0)
			}
		}
	}
	if !named {
		t.Errorf("the verdict's profiles do not name a VXLAN function where flannel-vxlan differs from %s: %+v", dps[0], profiles)
	}
	dir := t.TempDir()
	html := filepath.Join(dir, "report.html")
	if out, err := cli(ctx, "report", run.ID, "--store", results, "--file", html); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	page, err := os.ReadFile(html)
	if err != nil || !strings.Contains(string(page), `id="profiles"`) || !strings.Contains(string(page), "vxlan_xmit") {
		t.Errorf("the HTML report has no flame graph naming vxlan_xmit (%v)", err)
	}
	svg, err := cli(ctx, "results", "flamegraph", run.ID, "--store", results, "--target", "flannel-vxlan",
		"--path", "cross-node", "--workload", "tcp-stream/1")
	if err != nil || !strings.HasPrefix(svg, "<svg") || !strings.Contains(svg, "vxlan_xmit") {
		t.Errorf("results flamegraph: %v\n%.300s", err, svg)
	}
}

// vxlanFunction tells the kernel's VXLAN device functions: its own (vxlan_xmit, vxlan_rcv...),
// the UDP tunnel helpers it sends through, and the GRO cell it receives into (gro_cell_poll),
// which only tunnel devices use.
func vxlanFunction(name string) bool {
	for _, p := range []string{"vxlan_", "udp_tunnel", "gro_cell"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// jsonProfile is a profiled cell as `run -o json` writes it.
type jsonProfile struct {
	Target, Path, Workload string
	Versus                 struct {
		Target string
		Deltas []struct {
			Function string
			Points   float64
		}
	}
}
