package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/monitor"
	"github.com/cnibench/cnibench/internal/store"
	"github.com/cnibench/cnibench/internal/suite"
)

// endpoint is who runs a path's client, what it connects to, and whose counters are read.
type endpoint struct {
	clientPod, target string
	statPods          []podContainer
}

type podContainer struct{ pod, container string }

func (t *target) endpoint(path string, srv kube.Server) (endpoint, error) {
	pod := func(role string) string { return t.fixture.Pods[role].Name }
	ip := func(role string) string { return t.fixture.Pods[role].Status.PodIP }
	client := podContainer{pod(kube.RoleClient), kube.ClientContainer}
	switch path {
	case suite.SameNode:
		return endpoint{client.pod, ip(kube.RoleServerA), []podContainer{client, {pod(kube.RoleServerA), srv.Name}}}, nil
	case suite.CrossNode:
		return endpoint{client.pod, ip(kube.RoleServerB), []podContainer{client, {pod(kube.RoleServerB), srv.Name}}}, nil
	case suite.PodToService:
		return endpoint{client.pod, t.fixture.ServiceIP, []podContainer{client, {pod(kube.RoleServerB), srv.Name}}}, nil
	case suite.HostNetwork:
		hc := podContainer{pod(kube.RoleHostClient), kube.ClientContainer}
		return endpoint{hc.pod, ip(kube.RoleHostServer), []podContainer{hc, {pod(kube.RoleHostServer), srv.Name}}}, nil
	case suite.Localhost:
		lc := podContainer{pod(kube.RoleLocal), kube.ClientContainer}
		return endpoint{lc.pod, "127.0.0.1", []podContainer{lc, {lc.pod, srv.Name}}}, nil
	}
	return endpoint{}, fmt.Errorf("unknown path %q", path)
}

// measure runs one step and returns its sample; a failed tool gives a sample with Error set.
func (r *run) measure(ctx context.Context, tg *target, st Step) store.Sample {
	ew := st.Combo.Workload.Engine(st.Duration)
	s := store.Sample{RunID: r.id, Seq: st.Seq, Round: st.Round, Warmup: st.Warmup(),
		Target: tg.name, Path: st.Combo.Path, Workload: ew.ID(), Started: time.Now().UTC()}
	fail := func(err error) store.Sample {
		s.Error, s.Duration = err.Error(), time.Since(s.Started)
		return s
	}
	eng, err := engine.For(ew)
	if err != nil {
		return fail(err)
	}
	srv := tg.servers[ew.ID()]
	ep, err := tg.endpoint(st.Combo.Path, srv)
	if err != nil {
		return fail(err)
	}
	before, err := r.stats(ctx, tg, ep)
	if err != nil {
		return fail(err)
	}
	tctx, cancel := context.WithTimeout(ctx, st.Duration+45*time.Second)
	out, err := tg.client.Exec(tctx, tg.namespace, ep.clientPod, kube.ClientContainer, eng.ClientArgv(ew, ep.target, srv.Port))
	cancel()
	s.Raw = string(out)
	if err != nil {
		return fail(err)
	}
	after, err := r.stats(ctx, tg, ep)
	if err != nil {
		return fail(err)
	}
	m, err := eng.Parse(ew, out)
	if err != nil {
		return fail(fmt.Errorf("parse %s output: %w", eng.Name(), err))
	}
	s.Metrics = m
	s.Resources = resources(before, after, m, st.Duration)
	s.Duration = time.Since(s.Started)
	return s
}

// stats reads the counters of every pod of an endpoint concurrently, so that both ends are
// read at nearly the same instant.
func (r *run) stats(ctx context.Context, tg *target, ep endpoint) ([]monitor.NodeStat, error) {
	out := make([]monitor.NodeStat, len(ep.statPods))
	errs := make([]error, len(ep.statPods))
	var wg sync.WaitGroup
	for i, pc := range ep.statPods {
		wg.Add(1)
		go func(i int, pc podContainer) {
			defer wg.Done()
			tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			raw, err := tg.client.Exec(tctx, tg.namespace, pc.pod, pc.container, []string{"cnibench", "agent", "stat"})
			if err != nil {
				errs[i] = err
				return
			}
			if err := json.Unmarshal(raw, &out[i]); err != nil {
				errs[i] = fmt.Errorf("read counters of %s/%s: %w", pc.pod, pc.container, err)
			}
		}(i, pc)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// resources turns counters into the sample's cost figures. Host CPU is counted once per host
// (pods on one machine share its /proc/stat, as every node of the local cluster does); pod CPU
// is the client's and server's own cgroups. No IRQ time accounting here: softirq work lands on
// whatever task it interrupted, so host busy time is the honest total.
func resources(before, after []monitor.NodeStat, m engine.Metrics, d time.Duration) map[string]float64 {
	res := map[string]float64{}
	seenHost := map[string]bool{}
	var hostCPU, podCPU, busyPct, hosts, memUsed float64
	for i := range before {
		u, err := monitor.Delta(before[i], after[i])
		if err != nil {
			continue
		}
		if u.CgroupCPUSeconds >= 0 {
			podCPU += u.CgroupCPUSeconds
		}
		if seenHost[after[i].BootID] {
			continue
		}
		seenHost[after[i].BootID] = true
		hostCPU += u.CPUSeconds
		busyPct += u.CPUBusyPct
		memUsed += float64(u.MemUsedBytes)
		hosts++
	}
	if hosts == 0 {
		return res
	}
	res["host_cpu_seconds"] = hostCPU
	res["node_cpu_pct"] = busyPct / hosts
	res["pod_cpu_seconds"] = podCPU
	res["host_mem_used_mib"] = memUsed / hosts / (1 << 20)
	secs := d.Seconds()
	if gbps, ok := m["throughput_gbps"]; ok && gbps > 0 {
		gigabytes := gbps * secs / 8
		res["cpu_s_per_gb"] = hostCPU / gigabytes
		res["pod_cpu_s_per_gb"] = podCPU / gigabytes
	}
	for _, key := range []string{"transactions_per_s", "connections_per_s"} {
		if rate, ok := m[key]; ok && rate > 0 {
			res["cpu_s_per_1k_tx"] = hostCPU / (rate * secs / 1000)
			res["pod_cpu_s_per_1k_tx"] = podCPU / (rate * secs / 1000)
		}
	}
	return res
}
