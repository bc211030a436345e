package datapath

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/cluster/binaries"
	"github.com/cnibench/cnibench/internal/lab"
)

func TestCalicoRegistered(t *testing.T) {
	for name, want := range map[string]Calico{"calico-vxlan": {}, "canal": {Canal: true}, "calico-ebpf": {EBPF: true}} {
		d, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		c, ok := d.(Calico)
		if !ok || c != want || c.Name() != name {
			t.Errorf("%s: %#v", name, d)
		}
		canal := c.Canal
		// calico-ebpf loads the objects and replaces kube-proxy.
		if slices.Contains(c.Binaries(), binaries.CalicoBPFArchive) != c.EBPF || !slices.Contains(c.Binaries(), binaries.CalicoNodeBinary) || c.ReplacesKubeProxy() != c.EBPF {
			t.Errorf("%s binaries %v, replaces kube-proxy %v", name, c.Binaries(), c.ReplacesKubeProxy())
		}
		if dataplane := map[bool]string{false: "iptables", true: "bpf"}[c.EBPF]; c.Fingerprint()["calico_dataplane"] != dataplane {
			t.Errorf("%s fingerprint %v, want dataplane %s", name, c.Fingerprint(), dataplane)
		}
		// canal's flanneld needs the controller-manager's allocation; calico-ipam uses the plan.
		if d.AllocateNodeCIDRs() != canal {
			t.Errorf("%s: AllocateNodeCIDRs %v", name, d.AllocateNodeCIDRs())
		}
		if slices.Contains(c.Binaries(), binaries.FlanneldBinary) != canal {
			t.Errorf("%s binaries %v", name, c.Binaries())
		}
		fp := c.Fingerprint()
		for _, k := range []string{"calico_dataplane", "calico_encapsulation", "calico_ipam", "calico_iptables_backend"} {
			if fp[k] == "" {
				t.Errorf("%s fingerprint lacks %s: %v", name, k, fp)
			}
		}
	}
	if fp := (Calico{Canal: true}).Fingerprint(); fp["cni"] != "canal" || fp["calico_ipam"] != "host-local" || fp["flannel_version"] == "" {
		t.Errorf("canal fingerprint %v", fp)
	}
}

// TestCalicoConflist checks each deployment's IPAM, its pods' MTU (the underlay's less VXLAN's
// 50 bytes: jumbo frames for one) and that every path the plugin writes is the node's.
func TestCalicoConflist(t *testing.T) {
	c := testCiliumCluster(t)
	n := c.Nodes[0]
	for _, d := range []Calico{{}, {Canal: true}} {
		c.MTU = map[bool]int{false: 1500, true: 9000}[d.Canal]
		b, err := json.Marshal(d.conflist(c, n))
		if err != nil {
			t.Fatal(err)
		}
		var conf struct {
			Plugins []struct {
				Type     string `json:"type"`
				LogFile  string `json:"log_file_path"`
				Nodename string `json:"nodename"`
				NameFile string `json:"nodename_file"`
				MTU      int    `json:"mtu"`
				IPAM     struct {
					Type, DataDir string
					Ranges        [][]map[string]string
					AssignIPv4    string `json:"assign_ipv4"`
					AssignIPv6    string `json:"assign_ipv6"`
				}
			}
		}
		if err := json.Unmarshal(b, &conf); err != nil {
			t.Fatal(err)
		}
		p := conf.Plugins[0]
		if p.Type != "calico" || p.Nodename != "node1" || p.MTU != c.MTU-50 || !strings.HasPrefix(p.LogFile, c.StateDir+"/") ||
			p.NameFile != filepath.Join(c.StateDir, "calico", "node1", "lib", "nodename") {
			t.Errorf("%s: plugin %+v", d.Name(), p)
		}
		want := "calico-ipam"
		if d.Canal {
			want = "host-local"
			if len(p.IPAM.Ranges) != 1 || p.IPAM.Ranges[0][0]["subnet"] != "usePodCidr" || p.IPAM.DataDir == "" {
				t.Errorf("canal IPAM %+v", p.IPAM)
			}
		} else if p.IPAM.AssignIPv4 != "true" || p.IPAM.AssignIPv6 != "false" {
			t.Errorf("IPv4 cluster's calico-ipam assigns ipv4 %q ipv6 %q", p.IPAM.AssignIPv4, p.IPAM.AssignIPv6)
		}
		if p.IPAM.Type != want {
			t.Errorf("%s: IPAM %q, want %q", d.Name(), p.IPAM.Type, want)
		}
	}
}

// TestCalicoFamilies checks what each cluster family gives Calico: pools of each family per
// node, calico-node's addresses and felix's IPv6, the IPAM's families, and the pods' MTU
// under VXLAN over IPv6.
func TestCalicoFamilies(t *testing.T) {
	_, cidr6, _ := net.ParseCIDR("fdcb:0:250:100::/56")
	_, pod6, _ := net.ParseCIDR("fdcb:0:250:101::/64")
	for _, family := range []string{lab.DualStack, lab.IPv6} {
		c := testCiliumCluster(t)
		c.Family, c.ClusterCIDR6, c.Nodes[0].PodCIDR6, c.Nodes[0].IP6 = family, cidr6, pod6, net.ParseIP("fdcb:0:250::11")
		pools := calicoIPPools(c)
		if !strings.Contains(pools, "name: cnb-node1-v6\nspec:\n  cidr: fdcb:0:250:101::/64\n  blockSize: 122") {
			t.Errorf("%s: no IPv6 pool for node1:\n%s", family, pools)
		}
		if v4 := strings.Contains(pools, "cidr: 10.250.129.0/24"); v4 != (family == lab.DualStack) {
			t.Errorf("%s: IPv4 pool present %v:\n%s", family, v4, pools)
		}
		wantIP := map[string]string{lab.DualStack: "IP=10.250.0.11/24", lab.IPv6: "IP=none"}[family]
		for _, d := range []Calico{{}, {Canal: true}} {
			env := d.env(c, c.Nodes[0])
			for _, want := range []string{wantIP, "IP6=fdcb:0:250::11/64", "FELIX_IPV6SUPPORT=true"} {
				if !slices.Contains(env, want) {
					t.Errorf("%s %s: env lacks %s: %v", family, d.Name(), want, env)
				}
			}
			conf := d.conflist(c, c.Nodes[0])
			plugin := conf["plugins"].([]any)[0].(map[string]any)
			ipam := plugin["ipam"].(map[string]any)
			if d.Canal {
				ranges := ipam["ranges"].([][]map[string]string)
				if last := ranges[len(ranges)-1][0]["subnet"]; last != "usePodCidrIPv6" || len(ranges) != map[string]int{lab.DualStack: 2, lab.IPv6: 1}[family] {
					t.Errorf("%s canal ranges %v", family, ranges)
				}
			} else if ipam["assign_ipv6"] != "true" || ipam["assign_ipv4"] != fmt.Sprint(family == lab.DualStack) {
				t.Errorf("%s calico-ipam %v", family, ipam)
			}
			// calico-vxlan's pods fit VXLAN over IPv6 (70 bytes); canal's, flannel's IPv4 tunnel.
			if want := map[bool]int{false: c.MTU - 70, true: c.MTU - 50}[d.Canal]; plugin["mtu"] != want {
				t.Errorf("%s %s: pod MTU %v, want %d", family, d.Name(), plugin["mtu"], want)
			}
		}
	}
}

func TestCalicoIPPoolsAndEnv(t *testing.T) {
	c := testCiliumCluster(t)
	pools := calicoIPPools(c)
	for _, want := range []string{"name: cnb-node1", "cidr: 10.250.129.0/24", "vxlanMode: Always", `kubernetes.io/hostname == "node1"`} {
		if !strings.Contains(pools, want) {
			t.Errorf("pools lack %q:\n%s", want, pools)
		}
	}
	for _, d := range []Calico{{}, {Canal: true}, {EBPF: true}} {
		env := d.env(c, c.Nodes[0])
		// Only calico-ebpf's felix runs its eBPF dataplane, attached to the uplink and the
		// VXLAN device alone, its programs logging nothing (the only objects built).
		bpf := []string{"FELIX_BPFENABLED=true", "FELIX_BPFLOGLEVEL=off", `FELIX_BPFDATAIFACEPATTERN=^(eth0|vxlan\.calico)$`}
		if !d.EBPF {
			bpf = []string{"FELIX_BPFENABLED=false"}
		}
		for _, want := range bpf {
			if !slices.Contains(env, want) {
				t.Errorf("%s env lacks %s: %v", d.Name(), want, env)
			}
		}
		if d.EBPF {
			if re := regexp.MustCompile(strings.TrimPrefix(bpf[2], "FELIX_BPFDATAIFACEPATTERN=")); !re.MatchString("vxlan.calico") || re.MatchString("eth01") || re.MatchString("cali123") {
				t.Errorf("data interfaces %s", re)
			}
		}
		// Felix reports usage to the internet unless told not to.
		for _, want := range []string{"FELIX_USAGEREPORTINGENABLED=false", "NO_DEFAULT_POOLS=true", "NODENAME=node1", "IP=10.250.0.11/24"} {
			if !slices.Contains(env, want) {
				t.Errorf("%s env lacks %s: %v", d.Name(), want, env)
			}
		}
		backend := "CALICO_NETWORKING_BACKEND=vxlan"
		if d.Canal {
			backend = "CALICO_NETWORKING_BACKEND=none"
		}
		if !slices.Contains(env, backend) {
			t.Errorf("%s env lacks %s", d.Name(), backend)
		}
	}
}

// TestCalicoNodeMounts runs the mount script with a stand-in for calico-node that writes where
// calico-node does: its files must land in the node's directory, nothing in the host's
// /var/lib or /run, and the cluster's state directory must stay readable. A start-up that
// fails (an update conflict on the Node) runs again, as a restarted container would; one that
// keeps failing fails the script.
func TestCalicoNodeMounts(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for mount namespaces (CI runs as root)")
	}
	for _, p := range []string{"/var/lib/calico", "/run/calico"} {
		if _, err := os.Lstat(p); err == nil {
			t.Skipf("%s exists on this host already", p)
		}
	}
	for _, tc := range []struct {
		failures int // start-ups that fail before one succeeds
		want     []string
		ok       bool
	}{
		{0, []string{"-startup", "-allocate-tunnel-addrs", "-felix"}, true},
		{2, []string{"-startup", "-startup", "-startup", "-allocate-tunnel-addrs", "-felix"}, true},
		{99, []string{"-startup", "-startup", "-startup", "-startup", "-startup"}, false},
	} {
		t.Run(fmt.Sprintf("%d failed start-ups", tc.failures), func(t *testing.T) {
			state, dir, out, err := runCalicoNodeMounts(t, tc.failures)
			if (err == nil) != tc.ok {
				t.Fatalf("mount script: %v (want success %v)\n%s", err, tc.ok, out)
			}
			calls, _ := os.ReadFile(filepath.Join(dir, "lib", "calls"))
			if got := strings.Fields(string(calls)); !slices.Equal(got, tc.want) {
				t.Errorf("calico-node ran %v, want %v", got, tc.want)
			}
			if seen, _ := os.ReadFile(filepath.Join(dir, "run", "seen")); tc.ok && string(seen) != "kubeconfig" {
				t.Errorf("felix read %q through the state directory %s", seen, state)
			}
			for _, p := range []string{"/var/lib/calico", "/run/calico"} {
				if _, err := os.Lstat(p); err == nil {
					t.Errorf("%s was created on the host", p)
				}
			}
		})
	}
}

// runCalicoNodeMounts runs the mount script in a mount namespace of its own with a stand-in
// calico-node whose first failures start-ups fail; it returns the state and node directories.
func runCalicoNodeMounts(t *testing.T, failures int, bpf ...string) (state, dir string, out []byte, err error) {
	// Under /var/lib, as a cluster's is, so that the script must bind it back over its tmpfs.
	state, err = os.MkdirTemp("/var/lib", "cnb-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(state) })
	dir = filepath.Join(state, "calico", "node1")
	for _, sub := range []string{"lib", "run"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(state, "admin.kubeconfig"), []byte("kubeconfig"), 0o600); err != nil {
		t.Fatal(err)
	}
	fake := filepath.Join(t.TempDir(), "calico-node")
	script := `#!/bin/sh
set -e
echo "$1" >> /var/lib/calico/calls
case "$1" in
-startup) [ "$(grep -c startup /var/lib/calico/calls)" -gt ` + fmt.Sprint(failures) + ` ] ;;
-felix) cat ` + filepath.Join(state, "admin.kubeconfig") + ` > /run/calico/seen; mountpoint -q /sys/fs/bpf;
  if [ -d /usr/lib/calico ]; then cat /usr/lib/calico/bpf/tc.o /run/calico/cgroup/marker > /run/calico/bpf; ls /usr/lib/os-release >> /run/calico/bpf; fi;
  if echo 1 > /proc/sys/kernel/cnb-none 2>/dev/null; then exit 3; fi ;; esac
`
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--mount", "--propagation", "slave", "sh", "-c", calicoNodeMounts, "t",
		state, dir, fake, "true", "true", filepath.Join(state, "cache"), "node1"}, bpf...)
	out, err = exec.Command("unshare", args...).CombinedOutput()
	return state, dir, out, err
}

// TestCalicoNodeMountsBPF runs the mount script as calico-ebpf's: felix must find the objects
// at the fixed /usr/lib/calico/bpf with the rest of /usr/lib still there, and the node's cgroup
// at /run/calico/cgroup, and the host must have no /usr/lib/calico afterwards.
func TestCalicoNodeMountsBPF(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for mount namespaces (CI runs as root)")
	}
	for _, p := range []string{"/var/lib/calico", "/run/calico", "/usr/lib/calico"} {
		if _, err := os.Lstat(p); err == nil {
			t.Skipf("%s exists on this host already", p)
		}
	}
	objects, cgroup := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(objects, "calico", "bpf"), 0o755); err != nil {
		t.Fatal(err)
	}
	for path, text := range map[string]string{filepath.Join(objects, "calico", "bpf", "tc.o"): "object\n", filepath.Join(cgroup, "marker"): "cgroup\n"} {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, dir, out, err := runCalicoNodeMounts(t, 0, objects, cgroup)
	if err != nil {
		t.Fatalf("mount script: %v\n%s", err, out)
	}
	seen, _ := os.ReadFile(filepath.Join(dir, "run", "bpf"))
	if want := "object\ncgroup\n/usr/lib/os-release\n"; string(seen) != want {
		t.Errorf("felix saw %q, want %q", seen, want)
	}
	if _, err := os.Lstat("/usr/lib/calico"); err == nil {
		t.Error("/usr/lib/calico was created on the host")
	}
}
