package suite

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/setting"
)

// Validate checks the whole suite; every error is a *setting.Error named by its field's path
// (targets[0].local.nodes) that says what was expected. A refused suite is an *InvalidError.
func (s Suite) Validate() error {
	var errs []error
	if err := checkAPIVersion(s.APIVersion); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, s.validateTargets()...)
	errs = append(errs, s.validatePaths()...)
	errs = append(errs, s.validateWorkloads()...)
	errs = append(errs, s.validateGateway()...)
	errs = append(errs, s.validatePairs()...)
	for _, d := range dimensions() {
		errs = append(errs, d.validate(s)...)
	}
	errs = append(errs, s.validateReference()...)
	if err := s.checkDensity(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, s.validateRounds()...)
	if len(errs) == 0 {
		return nil
	}
	return &InvalidError{Err: errors.Join(errs...)}
}

// invalid is a refused field of the suite, at its path (targets[0].local.nodes): the message
// says what was expected.
func invalid(field, format string, args ...any) error {
	return &setting.Error{Name: field, Want: fmt.Sprintf(format, args...)}
}

// collect returns errs and a function adding a refused field to them.
func collect(errs *[]error) func(field, format string, args ...any) {
	return func(field, format string, args ...any) { *errs = append(*errs, invalid(field, format, args...)) }
}

// validateTargets checks each target: a unique name, one kind of cluster, a local block that
// validates and a cluster of its own, its policy variant, image and external host.
func (s Suite) validateTargets() []error {
	var errs []error
	add := collect(&errs)
	if len(s.Targets) == 0 {
		add("targets", "expected at least one target")
	}
	names, clusters := map[string]bool{}, map[string]Target{}
	for i, t := range s.Targets {
		switch {
		case t.Name == "":
			add(fmt.Sprintf("targets[%d].name", i), "expected a name")
		case names[t.Name]:
			add(fmt.Sprintf("targets[%d].name", i), "%q is used twice", t.Name)
		}
		names[t.Name] = true
		if t.Local != nil && (t.Kubeconfig != "" || t.Context != "") {
			add(fmt.Sprintf("targets[%d]", i), "expected either local or kubeconfig/context, not both")
		}
		if t.Local != nil && t.Local.Nodes == 1 {
			if two := s.TwoNodePaths(); len(two) > 0 {
				add(fmt.Sprintf("targets[%d].local.nodes", i), "1 node cannot carry paths %s (they need two nodes): expected at least 2, or paths among %s",
					strings.Join(two, ", "), strings.Join(OneNodePaths(), ", "))
			}
		}
		if t.Local != nil {
			errs = append(errs, localErrors(i, t.Local.Validate())...)
			if other, ok := clusters[t.Local.Name]; ok {
				errs = append(errs, sharedCluster(i, t, other)...)
			}
			clusters[t.Local.Name] = t
		}
		errs = append(errs, s.validateTargetGateway(i, t)...)
		if t.NetworkPolicy != nil {
			errs = append(errs, validatePolicy(i, t)...)
		}
		if t.Local != nil && t.Image != "" {
			add(fmt.Sprintf("targets[%d].image", i), "a local cluster runs the tools image it built; expected none (the run's tools image replaces it for every target)")
		}
		errs = append(errs, validateExternal(i, t)...)
		if err := validateSecondaryNetwork(i, t); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// sharedCluster checks a target that names the local cluster of an earlier one: allowed only
// for the same cluster (the same local block) through another Gateway API implementation,
// which is how two implementations are compared on the same nodes.
func sharedCluster(i int, t, other Target) []error {
	at := fmt.Sprintf("targets[%d].local.cluster", i)
	switch {
	case *t.Local != *other.Local:
		return []error{invalid(at, "%q is also target %s's, with another local block; a shared cluster needs the same one", t.Local.Name, other.Name)}
	case t.GatewayImpl() == other.GatewayImpl():
		return []error{invalid(at, "%q is used by two targets; each target needs a cluster of its own (two targets share one only to compare gateways: %s)",
			t.Local.Name, strings.Join(lab.Gateways(), ", "))}
	}
	return nil
}

// validateTargetGateway checks a target's Gateway API implementation: a known one, on a local
// cluster, for a suite that measures the gateway path.
func (s Suite) validateTargetGateway(i int, t Target) []error {
	if t.Gateway == "" {
		return nil
	}
	at := fmt.Sprintf("targets[%d].gateway", i)
	switch {
	case !slices.Contains(lab.Gateways(), t.Gateway):
		return []error{invalid(at, "%q: expected one of %s", t.Gateway, strings.Join(lab.Gateways(), ", "))}
	case t.Local == nil:
		return []error{invalid(at, "a remote cluster's Gateway API implementation is the GatewayClass it names; expected gatewayClassName instead")}
	case !slices.Contains(s.Paths, Gateway):
		return []error{invalid(at, "%q chooses the implementation of path %s, which the suite does not measure; expected %s in paths, or no gateway", t.Gateway, Gateway, Gateway)}
	}
	return nil
}

// validatePaths checks the paths and how long the pods live.
func (s Suite) validatePaths() []error {
	var errs []error
	add := collect(&errs)
	if len(s.Paths) == 0 {
		add("paths", "expected at least one of %s", strings.Join(AllPaths(), ", "))
	}
	for i, p := range s.Paths {
		if !slices.Contains(AllPaths(), p) {
			add(fmt.Sprintf("paths[%d]", i), "%q is not a path; expected one of %s", p, strings.Join(AllPaths(), ", "))
		}
	}
	if s.Pods != "" && s.Pods != PodsRun && s.Pods != PodsRound {
		add("pods", "%q: expected %s (deployed once for the run) or %s (a pairs level's pods per round)", s.Pods, PodsRun, PodsRound)
	}
	return errs
}

// validateWorkloads checks each workload as its engine does, each once, and its own duration.
func (s Suite) validateWorkloads() []error {
	var errs []error
	add := collect(&errs)
	if len(s.Workloads) == 0 {
		add("workloads", "expected at least one workload")
	}
	ids := map[string]bool{}
	for i, w := range s.Workloads {
		// The duration itself is checked once below, not once per workload; a rate search
		// checks that its samples give it enough trials.
		ew := w.Engine(min(max(w.SampleDuration(s).Truncate(time.Second), time.Second), engine.MaxDuration))
		if err := ew.Validate(); err != nil {
			errs = append(errs, workloadError(i, w, err))
			continue
		}
		if ids[ew.ID()] {
			add(fmt.Sprintf("workloads[%d]", i), "%s is listed twice", ew.ID())
		}
		ids[ew.ID()] = true
		if d := w.Duration.Duration; d != 0 && (d < time.Second || d%time.Second != 0) {
			add(fmt.Sprintf("workloads[%d].duration", i), "expected whole seconds, at least 1s, got %s", w.Duration)
		}
	}
	return errs
}

// workloadError names the setting of workload i that err refuses: its tool where the tool
// cannot measure it, the workload otherwise.
func workloadError(i int, w Workload, err error) error {
	var ute *engine.UnsupportedToolError
	if errors.As(err, &ute) {
		want := fmt.Sprintf("%s does not measure %s", ute.Tool, ute.Workload)
		if ute.Why != "" {
			want += " (" + ute.Why + ")"
		}
		return &setting.Error{Name: fmt.Sprintf("workloads[%d].tool", i), Value: strconv.Quote(w.Tool),
			Want: want + "; it measures " + ute.Measures}
	}
	return &setting.Error{Name: fmt.Sprintf("workloads[%d]", i), Err: err}
}

// validatePairs checks the concurrency levels: each in range, each once.
func (s Suite) validatePairs() []error {
	var errs []error
	add := collect(&errs)
	seen := map[int]bool{}
	for i, n := range s.Pairs {
		if n < 1 || n > MaxPairs {
			add(fmt.Sprintf("pairs[%d]", i), "expected 1-%d client/server pairs, got %d", MaxPairs, n)
		}
		if seen[n] {
			add(fmt.Sprintf("pairs[%d]", i), "%d is listed twice", n)
		}
		seen[n] = true
	}
	return errs
}

// validateRounds checks the rounds and their samples: repetitions, durations and the
// precision target's margin and budget.
func (s Suite) validateRounds() []error {
	var errs []error
	add := collect(&errs)
	if s.Repetitions < 2 || s.Repetitions > 1000 {
		add("repetitions", "expected 2-1000 (a confidence interval needs at least 2), got %d", s.Repetitions)
	}
	if s.Duration.Duration < time.Second || s.Duration.Duration%time.Second != 0 {
		add("duration", "expected whole seconds, at least 1s, got %s", s.Duration)
	}
	if w := s.Warmup; !w.Off && (w.Duration < time.Second || w.Duration%time.Second != 0) {
		add("warmup", "expected whole seconds, at least 1s, or off, got %s", w.Duration)
	}
	if s.Precision < 0 || s.Precision >= 1 {
		add("precision", "expected a percentage above 0%% and below 100%% (e.g. 5%%), got %g%%", float64(s.Precision)*100)
	}
	if s.Margin < 0 || s.Margin >= 0.5 || (s.Margin > 0 && s.Precision == 0) {
		add("margin", "expected a percentage above 0%% and below 50%% (e.g. 2%%), and only with precision (it says when a comparison needs no more rounds), got %g%%", float64(s.Margin)*100)
	}
	if s.Budget.Duration < 0 || (s.Budget.Duration > 0 && s.Precision == 0) {
		add("budget", "expected a positive duration, and only with precision (it bounds the rounds precision adds), got %s", s.Budget)
	}
	return errs
}

// Engine converts a suite workload to the engine's form for a sample of duration d.
func (w Workload) Engine(d time.Duration) engine.Workload {
	ew := engine.Workload{Kind: w.Kind, Streams: w.Streams, MessageSize: w.Size, Rate: w.Rate, Threads: w.Threads, Tool: w.Tool, Weight: w.Weight, Duration: d}
	if len(w.VUs) > 0 {
		ew.VUs = w.VUs[0] // expandVUs left one level per workload
	}
	if w.MaxLoss != nil {
		ew.Search, ew.MaxLoss = true, *w.MaxLoss
	}
	if ew.Kind == engine.TCPStream && ew.Streams == 0 {
		ew.Streams = 1
	}
	return ew
}

// validatePolicy checks a target's policy variant: a bounded number of extra policies, and a
// local datapath that enforces policies at all (a remote cluster's is checked when the run
// verifies enforcement).
func validatePolicy(i int, t Target) []error {
	var errs []error
	p := *t.NetworkPolicy
	if p.Extra < 0 || p.Extra > MaxExtraPolicies {
		errs = append(errs, invalid(fmt.Sprintf("targets[%d].networkPolicy.extra", i), "expected 0-%d, got %d", MaxExtraPolicies, p.Extra))
	}
	if !p.Any() || t.Local == nil {
		return errs
	}
	dp, err := lab.LookupDatapath(t.Local.Datapath)
	if err != nil {
		return errs // reported with the datapath field
	}
	if !dp.EnforcesNetworkPolicy {
		enforcing := lab.DatapathsWhere(func(d lab.Datapath) bool { return d.EnforcesNetworkPolicy })
		errs = append(errs, invalid(fmt.Sprintf("targets[%d].networkPolicy", i), "datapath %s does not enforce NetworkPolicy, so %s would measure nothing; expected a datapath that does (%s)",
			t.Local.Datapath, p, strings.Join(enforcing, ", ")))
	}
	return errs
}

// LocalPodsPerNode is how many benchmark pods a local cluster's node takes: its kubelets admit
// 250 pods, and CoreDNS and datapath agents need a few.
const LocalPodsPerNode = 240

// checkDensity refuses a suite whose largest pairs level puts more pods on a local cluster's
// busiest node than its kubelet admits: clients, same-node servers, host-network clients and
// localhost pods all go to the first node.
func (s Suite) checkDensity() error {
	local := false
	for _, t := range s.Targets {
		local = local || t.Local != nil
	}
	if !local {
		return nil
	}
	perPair := map[string]bool{}
	for _, w := range s.Workloads {
		if engine.InPod(w.Kind) {
			perPair["client"] = true
		}
	}
	for _, name := range s.Paths {
		if p, ok := PathOf(name); ok {
			perPair[p.Client] = true
			if p.Server != "" && p.OneNode() {
				perPair[p.Server] = true
			}
		}
	}
	variants := 1
	for _, t := range s.Targets {
		variants = max(variants, s.variants(t))
	}
	if pods := len(perPair) * s.MostPairs() * variants; pods > LocalPodsPerNode {
		return invalid("pairs", "%d pairs over paths %s and %d %s variants put %d pods on a local node, which admits %d: expected fewer pairs, paths, %s",
			s.MostPairs(), strings.Join(s.Paths, ", "), variants, dimensionWords(false, "and"), pods, LocalPodsPerNode, dimensionWords(true, "or"))
	}
	return nil
}

// validateExternal checks a target's external host.
func validateExternal(i int, t Target) []error {
	e := t.External
	if e == nil {
		return nil
	}
	var errs []error
	if t.Local != nil {
		errs = append(errs, invalid(fmt.Sprintf("targets[%d].external", i), "a local cluster has its own external host; expected none"))
	}
	if host, port, err := net.SplitHostPort(e.Address); err != nil || host == "" || port == "" {
		errs = append(errs, invalid(fmt.Sprintf("targets[%d].external.address", i), "expected HOST:PORT of a `cnibench agent serve`, got %q", e.Address))
	}
	if e.TokenFile == "" {
		errs = append(errs, invalid(fmt.Sprintf("targets[%d].external.tokenFile", i), "expected the file holding the token of the `cnibench agent serve` at %s (the token file it was started with)", e.Address))
	}
	if e.GatewayAddress != "" && strings.Contains(e.GatewayAddress, ":") && net.ParseIP(e.GatewayAddress) == nil {
		errs = append(errs, invalid(fmt.Sprintf("targets[%d].external.gatewayAddress", i), "expected a host name or IP without a port, got %q", e.GatewayAddress))
	}
	return errs
}

// validateSecondaryNetwork checks a target's NetworkAttachmentDefinition: a remote cluster's,
// named as a pod's k8s.v1.cni.cncf.io/networks annotation names one.
func validateSecondaryNetwork(i int, t Target) error {
	v := t.SecondaryNetwork
	if v == "" {
		return nil
	}
	field := fmt.Sprintf("targets[%d].secondaryNetwork", i)
	if t.Local != nil {
		return invalid(field, "a local cluster offers its own secondary network (local.multus: true); expected none")
	}
	ns, name, qualified := strings.Cut(v, "/")
	if !qualified {
		ns, name = "", v
	}
	if (qualified && !isNamespaceName(ns)) || !lab.IsObjectName(name) {
		return &setting.Error{Name: field, Value: strconv.Quote(v),
			Want: "expected a NetworkAttachmentDefinition as NAMESPACE/NAME, or NAME in the run's namespace (lowercase letters, digits, '-' and, in NAME, '.')"}
	}
	return nil
}

// isNamespaceName reports whether s can name a namespace: a DNS-1123 label of at most 63
// characters.
func isNamespaceName(s string) bool {
	return len(s) <= 63 && !strings.Contains(s, ".") && lab.IsObjectName(s)
}

// validateGateway checks that the gateway path and the gateway-split workload come together.
func (s Suite) validateGateway() []error {
	var errs []error
	splits := 0
	for i, w := range s.Workloads {
		if w.Kind == engine.GatewaySplit {
			splits++
			if !slices.Contains(s.Paths, Gateway) {
				errs = append(errs, invalid(fmt.Sprintf("workloads[%d]", i), "%s runs on path %s only; expected it in paths", engine.GatewaySplit, Gateway))
			}
		}
	}
	if slices.Contains(s.Paths, Gateway) && splits == 0 {
		errs = append(errs, invalid("paths", "%s carries only %s workloads; expected one, e.g. {kind: %s, weight: 40, vus: [1, 10, 100]}", Gateway, engine.GatewaySplit, engine.GatewaySplit))
	}
	if splits > 0 && s.Duration.Duration < 5*time.Second {
		errs = append(errs, invalid("duration", "%s judges its split per 5-second window; expected at least 5s, got %s", engine.GatewaySplit, s.Duration))
	}
	if splits > 0 && s.MostPairs() > 1 {
		errs = append(errs, invalid("pairs", "%s scales with vus, not pairs; expected pairs [1], got %v", engine.GatewaySplit, s.Pairs))
	}
	return errs
}

// localErrors places each of a local block's refused settings in the suite:
// targets[0].local.nodes: 51: expected a whole number from 1 to 50.
func localErrors(i int, err error) []error {
	if err == nil {
		return nil
	}
	var out []error
	for _, e := range unjoin(err) {
		at := fmt.Sprintf("targets[%d].local", i)
		var se *setting.Error
		if errors.As(e, &se) {
			placed := *se
			placed.Name = at + "." + se.Name
			out = append(out, &placed)
			continue
		}
		out = append(out, &setting.Error{Name: at, Err: e})
	}
	return out
}

// unjoin lists the errors joined in err, or err alone.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
