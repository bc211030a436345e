package tuning

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBuiltinProfiles checks that the shipped profiles are valid and set only allowed sysctls.
func TestBuiltinProfiles(t *testing.T) {
	for _, p := range Builtin() {
		if err := p.Validate(); err != nil {
			t.Errorf("%s: %v", p.Name, err)
		}
	}
	if p, err := Load("throughput"); err != nil || p.Sysctls["net.ipv4.tcp_rmem"] == "" || len(Unsafe(p.Sysctls)) != 0 {
		t.Errorf("Load(throughput) = %+v, %v; want tcp_rmem set and nothing unsafe", p, err)
	}
	if p, _ := Load("latency"); len(Unsafe(p.Sysctls)) != 3 {
		t.Errorf("latency's unsafe sysctls = %v, want 3", Unsafe(p.Sysctls))
	}
	for _, k := range UnsafeAllowed() {
		if k == "net.ipv4.tcp_rmem" || k == "net.ipv4.tcp_wmem" {
			t.Errorf("UnsafeAllowed lists the safe %s", k)
		}
	}
}

// TestLoadErrors checks that a bad reference or file gets one error naming what is wrong.
func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for ref, want := range map[string]string{
		"jumbo": `expected a profile file (a path) or one of default, throughput, latency, no-offloads, veth-gro`,
		write("a.yaml", "name: big\nsysctls: {net.core.rmem_max: '9'}"): "net.core.rmem_max: expected one of the TCP settings",
		write("b.yaml", "name: Big"):                                    `name: "Big": expected a name`,
		write("c.yaml", "name: x\nsysctls: {net.ipv4.tcp_sack: ' '}"):   "net.ipv4.tcp_sack: expected a value",
		write("d.yaml", "name: x\nsysctl: {}"):                          `unknown field "sysctl"`,
		write("e.yaml", "name: x\noffloads: {lro: off}"):                `offloads: lro: expected one of gro, gso, tso`,
		write("f.yaml", "name: x\noffloads: {gro: 'no'}"):               `offloads: gro: "no": expected on or off`,
		filepath.Join(dir, "none.yaml"):                                 "no such file",
	} {
		if _, err := Load(ref); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Load(%s) = %v, want an error containing %q", ref, err, want)
		}
	}
	if p, err := Load(write("g.yaml", "name: lean\noffloads: {tso: off, gro: on}")); err != nil || strings.Join(p.OffloadArgs(), " ") != "gro on tso off" {
		t.Errorf("Load(g.yaml) = %+v, %v; want the ethtool arguments gro on tso off", p, err)
	}
	p, err := Load(write("ok.yml", "name: wide\nsysctls:\n  net.ipv4.tcp_rmem: \"4096\t1000  2000\"\n"))
	if err != nil || Normalize(p.Sysctls["net.ipv4.tcp_rmem"]) != "4096 1000 2000" {
		t.Errorf("Load(ok.yml) = %+v, %v", p, err)
	}
}
