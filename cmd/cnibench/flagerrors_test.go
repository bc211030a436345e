package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/lab"
)

// The library names a refused setting; `cluster create` names the flag that set it, whether
// the setting's error comes alone, joined with others or wrapped, and keeps the error's chain.
func TestClusterErrorsNameTheFlags(t *testing.T) {
	bad := lab.LocalConfig{Name: "Bad_Name", Nodes: 0, Datapath: "calico", ProxyMode: "ipvs", Kubernetes: "v1.99.0", CRI: "docker"}
	err := asFlags(bad.Validate(), clusterFlag)
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
	wrapped := asFlags(fmt.Errorf("reserve: %w", &lab.FieldError{Field: "subnet", Value: "10.230.0.0/16", Want: "collides"}), clusterFlag)
	var fe *lab.FieldError
	if wrapped.Error() != "reserve: --subnet 10.230.0.0/16: collides" || !errors.As(wrapped, &fe) {
		t.Errorf("wrapped: %v", wrapped)
	}
	if other := errors.New("x"); asFlags(other, clusterFlag) != other || asFlags(nil, clusterFlag) != nil {
		t.Error("errors without a setting pass unchanged")
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
