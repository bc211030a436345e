package hostsnap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cnibench/cnibench/internal/cgroupfs"
)

// cgroupHooks are the cgroup attach points a socket load balancer, a policy engine or a
// device controller uses, by the name bpftool gives them.
func cgroupHooks() map[string]ebpf.AttachType {
	return map[string]ebpf.AttachType{
		"ingress": ebpf.AttachCGroupInetIngress, "egress": ebpf.AttachCGroupInetEgress,
		"sock_create": ebpf.AttachCGroupInetSockCreate, "sock_release": ebpf.AttachCgroupInetSockRelease,
		"sock_ops": ebpf.AttachCGroupSockOps, "device": ebpf.AttachCGroupDevice,
		"connect4": ebpf.AttachCGroupInet4Connect, "connect6": ebpf.AttachCGroupInet6Connect,
		"post_bind4": ebpf.AttachCGroupInet4PostBind, "bind4": ebpf.AttachCGroupInet4Bind,
		"sendmsg4": ebpf.AttachCGroupUDP4Sendmsg, "recvmsg4": ebpf.AttachCGroupUDP4Recvmsg,
		"sendmsg6": ebpf.AttachCGroupUDP6Sendmsg, "recvmsg6": ebpf.AttachCGroupUDP6Recvmsg,
		"getpeername4": ebpf.AttachCgroupInet4GetPeername, "getpeername6": ebpf.AttachCgroupInet6GetPeername,
	}
}

// CgroupPrograms lists the BPF programs attached to a cgroup2 directory, by hook: with
// effective, also those inherited from its ancestors, which is what its processes run.
func CgroupPrograms(dir string, effective bool) (map[string][]ebpf.ProgramID, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("open cgroup %s: %w", dir, err)
	}
	defer f.Close()
	var flags uint32
	if effective {
		flags = 1 // BPF_F_QUERY_EFFECTIVE
	}
	out := map[string][]ebpf.ProgramID{}
	for name, at := range cgroupHooks() {
		res, err := link.QueryPrograms(link.QueryOptions{Target: int(f.Fd()), Attach: at, QueryFlags: flags})
		if errors.Is(err, ebpf.ErrNotSupported) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("query %s programs of %s: %w", name, dir, err)
		}
		for _, p := range res.Programs {
			out[name] = append(out[name], p.ID)
		}
	}
	return out, nil
}

// takeCgroupBPF records the programs attached to the host's cgroup2 root: a socket load
// balancer attached there would translate every connection on the machine, and it outlives
// its agent until detached. Programs are named (IDs change with every load).
func takeCgroupBPF(_ context.Context, s *Snapshot) error {
	root, err := cgroupfs.Cgroup2Mount()
	if err != nil || root == "" {
		return err
	}
	progs, err := CgroupPrograms(root, false)
	if err != nil {
		return err
	}
	for hook, ids := range progs {
		for _, id := range ids {
			s.BPF = append(s.BPF, fmt.Sprintf("cgroup-bpf %s %s %s", root, hook, programName(id)))
		}
	}
	return nil
}

// programName is the name of the loaded program id, "?" when it cannot be read.
func programName(id ebpf.ProgramID) string {
	p, err := ebpf.NewProgramFromID(id)
	if err != nil {
		return "?"
	}
	defer p.Close()
	if info, err := p.Info(); err == nil {
		return info.Name
	}
	return "?"
}

// takeLinkBPF records the BPF programs attached to the root namespace's links (tc, tcx and
// XDP, as bpftool lists them), by link and name: a datapath's programs belong on links inside
// its nodes' namespaces, which die with them; one on a host link would see the host's traffic.
func takeLinkBPF(ctx context.Context, s *Snapshot) error {
	out, err := run(ctx, "bpftool", "-j", "net", "show")
	if err != nil {
		return fmt.Errorf("%w (Debian package bpftool; scripts/setup.sh installs it)", err)
	}
	entries, err := parseBPFNet(out)
	if err != nil {
		return err
	}
	s.BPF = append(s.BPF, entries...)
	return nil
}

// parseBPFNet turns `bpftool -j net show` into "link-bpf DEV KIND NAME" entries.
func parseBPFNet(out []byte) ([]string, error) {
	type attachment struct {
		Devname string `json:"devname"`
		Kind    string `json:"kind"`
		Mode    string `json:"mode"`
		Name    string `json:"name"`
		ID      uint32 `json:"id"`
	}
	var nets []map[string][]attachment
	if err := json.Unmarshal(out, &nets); err != nil {
		return nil, fmt.Errorf("bpftool net show: %w", err)
	}
	var entries []string
	for _, n := range nets {
		for hook, list := range n {
			for _, a := range list {
				kind := a.Kind
				if kind == "" {
					kind = a.Mode
				}
				// bpftool names a tc program "NAME:[ID]" and an XDP one not at all; IDs
				// change with every load.
				name, _, _ := strings.Cut(a.Name, ":[")
				if name == "" {
					name = programName(ebpf.ProgramID(a.ID))
				}
				entries = append(entries, fmt.Sprintf("link-bpf %s %s %s %s", a.Devname, hook, kind, name))
			}
		}
	}
	return entries, nil
}
