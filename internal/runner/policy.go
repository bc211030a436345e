package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/cnibench/cnibench/internal/agentcmd"
	"github.com/cnibench/cnibench/internal/catalog"
	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/suite"
)

// closedPort is a port no server listens on: probes to it are refused while no policy is
// enforced and time out once one drops them.
const closedPort = serverPortBase - 1

// enforceTimeout bounds the wait for a datapath to enforce a new policy; an agent working
// through a thousand policies takes seconds, one that ignores policies never gets there.
const enforceTimeout = 3 * time.Minute

// applyPolicy puts a target under its NetworkPolicy variant and, for an allow policy, waits
// until the datapath enforces it: a figure measured before the policy bites would be labelled
// with a variant it did not measure. The time from the allow policy's create to the first
// probe it dropped is stored as the target's enforcement latency.
func (r *run) applyPolicy(ctx context.Context, tg *target, p suite.NetworkPolicy, servers []kube.Server) error {
	server := probeServer(tg.fixture)
	verify := p.Allow && server != "" && tg.fixture.Has(kube.RoleClient)
	if verify {
		// Before any policy the closed port must answer with a refusal; otherwise a timeout
		// afterwards would prove nothing.
		out, err := r.probe(ctx, tg, server, closedPort)
		if err != nil {
			return err
		}
		if out != agentcmd.ProbeRefused {
			return fmt.Errorf("before any policy, a probe of %s port %d ended %s, not refused: cannot tell whether the policy is enforced", server, closedPort, out)
		}
	}
	spec := kube.PolicySpec{Namespace: tg.namespace, RunID: r.id, Extra: p.Extra}
	for _, s := range servers {
		spec.Ports = append(spec.Ports, s.Port)
		if s.DataPort != 0 {
			spec.Ports = append(spec.Ports, s.DataPort)
		}
	}
	if p.Extra > 0 {
		r.progress("target %s: creating %d unrelated NetworkPolicies", tg.name, p.Extra)
		began := time.Now()
		err := tg.client.ApplyPolicies(ctx, spec, func(n int) {
			r.progress("target %s: %d of %d created", tg.name, n, p.Extra)
		})
		if err != nil {
			return err
		}
		r.progress("target %s: %d unrelated NetworkPolicies created in %.1fs", tg.name, p.Extra, time.Since(began).Seconds())
	}
	if !p.Allow {
		return nil
	}
	// The allow policy comes last, so the time to enforcement is its own.
	spec.Allow, spec.Extra = true, 0
	if !verify {
		r.progress("target %s: the allow policy selects no measured pod (no pod-network path), nothing to verify", tg.name)
		return tg.client.ApplyPolicies(ctx, spec, nil)
	}
	var created time.Time
	dropped, err := r.probeUntil(ctx, tg, server, closedPort, agentcmd.ProbeTimeout, func() error {
		created = time.Now()
		return tg.client.ApplyPolicies(ctx, spec, nil)
	})
	if err != nil {
		return fmt.Errorf("the datapath did not enforce NetworkPolicy %s (probes of %s port %d never started to be dropped; does it enforce policies?): %w",
			kube.AllowPolicyName, server, closedPort, err)
	}
	out, err := r.probe(ctx, tg, server, servers[0].Port)
	if err != nil {
		return err
	}
	if out != agentcmd.ProbeOpen {
		return fmt.Errorf("policy %s is enforced but the client's connection to %s port %d ended %s: the policy drops measured traffic", kube.AllowPolicyName, server, servers[0].Port, out)
	}
	ms := latencyMS(created, dropped)
	r.progress("target %s: NetworkPolicy enforced %.0f ms after its create", tg.name, ms)
	tg.addSetup(setupPolicy, 1, map[string]float64{catalog.PolicyEnforced: ms})
	return nil
}

// probe runs `cnibench agent probe` in the first client pod.
func (r *run) probe(ctx context.Context, tg *target, ip string, port int) (string, error) {
	addr := net.JoinHostPort(ip, strconv.Itoa(port))
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	raw, err := tg.client.Exec(pctx, tg.namespace, tg.fixture.Pod(kube.RoleClient, 0).Name, kube.ClientContainer,
		agentcmd.ProbeCmd{Target: addr, Timeout: time.Second}.Argv())
	if err != nil {
		return "", fmt.Errorf("probe %s: %w", addr, err)
	}
	var res agentcmd.ProbeResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return "", fmt.Errorf("probe %s: parse %q: %w", addr, raw, err)
	}
	return res.Outcome, nil
}

// probeServer is the pod-network server the enforcement probes target: the first pair's
// cross-node one when the run has it.
func probeServer(f *kube.Fixture) string {
	for _, role := range []string{kube.RoleServerB, kube.RoleServerA} {
		if f.Pod(role, 0) != nil {
			return f.PodIP(role, 0)
		}
	}
	return ""
}
