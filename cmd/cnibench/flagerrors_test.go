package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/setting"
	"github.com/cnibench/cnibench/internal/suite"
)

// The library names a refused setting; `cluster create` names the flag that set it, whether
// the setting's error comes alone, joined with others or wrapped, and keeps the error's chain.
func TestClusterErrorsNameTheFlags(t *testing.T) {
	create, _, err := newRootCommand().Find([]string{"cluster", "create"})
	if err != nil {
		t.Fatal(err)
	}
	clusterFlag := flagOf(create)
	bad := lab.LocalConfig{Name: "Bad_Name", Nodes: 0, Datapath: "calico", ProxyMode: "ipvs", Kubernetes: "v1.99.0", CRI: "docker"}
	err = asFlags(bad.Validate(), clusterFlag)
	for _, want := range []string{
		`--name "Bad_Name": expected 1-11 characters`,
		"--nodes 0: expected a whole number from 1 to",
		`--datapath "calico": expected one of bridge`,
		`--kubernetes-version "v1.99.0": expected one of v1.37.2`,
		`--cri "docker": expected one of containerd, crio`,
	} {
		if err == nil || !containsLine(err.Error(), want) {
			t.Errorf("want a line starting %q in:\n%v", want, err)
		}
	}
	cfg := lab.LocalConfig{}.WithDefaults()
	cfg.ProxyMode = "ipvs"
	mode := asFlags(cfg.Validate(), clusterFlag)
	if mode == nil || !containsLine(mode.Error(), `--proxy-mode "ipvs": expected nftables or iptables`) {
		t.Errorf("proxy mode: %v", mode)
	}
	cfg = lab.LocalConfig{Multus: true}.WithDefaults()
	if multus := asFlags(cfg.Validate(), clusterFlag); multus == nil || !containsLine(multus.Error(), "--multus true: Multus delegates here to") {
		t.Errorf("multus on bridge: %v", multus)
	}
	wrapped := asFlags(fmt.Errorf("reserve: %w", &setting.Error{Name: "subnet", Value: "10.230.0.0/16", Want: "collides"}), clusterFlag)
	var fe *setting.Error
	if wrapped.Error() != "reserve: --subnet 10.230.0.0/16: collides" || !errors.As(wrapped, &fe) {
		t.Errorf("wrapped: %v", wrapped)
	}
	if other := errors.New("x"); asFlags(other, clusterFlag) != other || asFlags(nil, clusterFlag) != nil {
		t.Error("errors without a setting pass unchanged")
	}
	// A setting no flag of the command sets keeps its name.
	if got := asFlags(&setting.Error{Name: "baseline", Value: "x", Want: "y"}, clusterFlag); got.Error() != "baseline: x: y" {
		t.Errorf("a setting without a flag here: %v", got)
	}
	run, _, err := newRootCommand().Find([]string{"run"})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"networkPolicies": "--network-policies", "cluster": "--cluster", "baseline": "--baseline", "kubernetes": ""} {
		if got := flagOf(run)(name); got != want {
			t.Errorf("run's flag for %s: %q, want %q", name, got, want)
		}
	}
	// As a kubectl plugin the commands' paths read "kubectl cnibench ...": the flags stay.
	plugin := newRootCommand()
	plugin.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl cnibench"}
	create, _, err = plugin.Find([]string{"cluster", "create"})
	if err != nil {
		t.Fatal(err)
	}
	if got := flagOf(create)("kubernetes"); got != "--kubernetes-version" {
		t.Errorf("the plugin's cluster create names kubernetes %q", got)
	}
}

func containsLine(text, prefix string) bool {
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, prefix) {
			return true
		}
	}
	return false
}

// Every setting a library refuses by name is set by a flag of the command that passes it on,
// so that the command line names the flag.
func TestSettingsHaveTheirFlags(t *testing.T) {
	for path, names := range map[string][]string{
		"cluster create": {"cluster", "nodes", "datapath", "proxyMode", "kubernetes", "cri", "runtimes", "subnet", "wait", "multus"},
		"cluster delete": {"cluster"},
		"run": {"warmup", "precision", "margin", "pairs", "cri", "networkPolicies", "faithful", "baseline", "nodes", "store",
			"namespace", "image", "external", "externalTokenFile", "externalCAFile", "externalGatewayAddress", "families", "proxyMode", "output"},
		"compare":                {"metrics", "store", "output"},
		"results show":           {"store", "output"},
		"results list":           {"output"},
		"agent rr":               {"target", "port", "duration", "size", "timeout", "maxConsecutiveErrors"},
		"agent echo-server":      {"port", "size"},
		"agent probe":            {"until"},
		"agent external-servers": {"server", "start"},
	} {
		cmd, _, err := newRootCommand().Find(strings.Fields(path))
		if err != nil || cmd.CommandPath() != "cnibench "+path {
			t.Errorf("%s: no such command (%v)", path, err)
			continue
		}
		for _, name := range names {
			if flagOf(cmd)(name) == "" {
				t.Errorf("%s: no flag sets the setting %s", path, name)
			}
		}
	}
}

// A refused suite's fields that flags also set are named both ways.
func TestSuiteErrorsNameTheFlagsToo(t *testing.T) {
	_, err := suite.Resolve("", suite.Overrides{Precision: -1, Margin: 0.02, Repetitions: -1})
	var invalid *suite.InvalidError
	if !errors.As(err, &invalid) {
		t.Fatalf("not a refused suite: %v", err)
	}
	run, _, ferr := newRootCommand().Find([]string{"run"})
	if ferr != nil {
		t.Fatal(ferr)
	}
	got := withSuiteFlags(err, invalid, run)
	if !strings.Contains(got.Error(), "margin (--margin):") || !strings.Contains(got.Error(), "repetitions (--repetitions):") || !errors.As(got, &invalid) {
		t.Errorf("got %v", got)
	}
	for field, flag := range suiteFieldFlags() {
		if run.Flag(flag) == nil {
			t.Errorf("%s: run has no flag --%s", field, flag)
		}
	}
	// Every variant dimension's list, the suite's, by its flag.
	_, err = suite.Resolve("", suite.Overrides{Runtimes: []string{"BAD"}, Tunings: []string{"nope"}, Families: []string{"v4"}})
	if !errors.As(err, &invalid) {
		t.Fatalf("not a refused suite: %v", err)
	}
	got = withSuiteFlags(err, invalid, run)
	for _, want := range []string{"runtimes[0] (--runtimes):", "tunings[0] (--tunings):", "families[0] (--families):"} {
		if !strings.Contains(got.Error(), want) {
			t.Errorf("want %q in %v", want, got)
		}
	}
	// Through the command line: a suite file's local block keeps its field paths.
	file := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(file, []byte("targets: [{name: a, local: {cluster: X, nodes: 60}}]\nrepetitions: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := newRootCommand()
	root.SetArgs([]string{"run", "-f", file})
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	err = executeCommand(context.Background(), root)
	for _, want := range []string{`targets[0].local.cluster (--cluster): "X": expected`, "targets[0].local.nodes: 60: expected", "repetitions (--repetitions):"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("run -f with a bad suite: %v, want %q", err, want)
		}
	}
}
