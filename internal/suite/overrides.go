package suite

import (
	"strconv"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/setting"
)

// Overrides are command-line settings that replace parts of a suite.
type Overrides struct {
	Kubeconfig, Context string        // a remote target replacing the suite's targets
	External            string        // the remote target's external host (agent host:port)
	ExternalGateway     string        // the address of it the remote cluster routes via its egress gateway
	ExternalTokenFile   string        // the file holding the external agent's token
	ExternalCAFile      string        // the CA of the external agent's TLS certificate
	SecondaryNetwork    string        // the remote targets' NetworkAttachmentDefinition (NAMESPACE/NAME or NAME)
	Datapath, ProxyMode string        // local target settings
	Kubernetes          string        // local target's Kubernetes release
	Datapaths           []string      // one local cluster per datapath, measured side by side
	LocalCluster        string        // local cluster name
	Paths               []string      // replaces paths
	Pairs               []int         // replaces pairs
	Runtimes            []string      // replaces runtimes
	Tunings             []string      // replaces tunings
	Families            []string      // replaces families
	CRIs                []string      // one local cluster per CRI, measured side by side
	Repetitions         int           // 0 keeps the suite's
	Duration, Warmup    time.Duration // 0 keeps the suite's
	NoWarmup            bool          // no warm-up round
	Seed                int64
	Precision           float64       // 0 keeps the suite's; negative turns it off
	Budget              time.Duration // 0 keeps the suite's
	Margin              float64       // 0 keeps the suite's
	Pods                string        // empty keeps the suite's
	Profile             bool          // records CPU profiles (true turns it on, false keeps the suite's)
	Faithful            bool          // measures with the study's own sample durations and tools (reference.durations, reference.tools)
	// NetworkPolicies measures each target once per variant, a local cluster per variant.
	NetworkPolicies []NetworkPolicy
}

// Resolve loads the suite file (or the default suite) and applies the overrides.
func Resolve(file string, o Overrides) (Suite, error) {
	s := Default()
	if file != "" {
		var err error
		if s, err = Load(file); err != nil {
			return Suite{}, err
		}
	}
	var err error
	if s.Targets, err = o.targets(s.Targets); err != nil {
		return Suite{}, err
	}
	if len(o.Paths) > 0 {
		s.Paths = o.Paths
	}
	if len(o.Pairs) > 0 {
		s.Pairs = o.Pairs
	}
	for _, d := range dimensions() {
		if list := d.override(o); len(list) > 0 {
			*d.suite(&s) = list
		}
	}
	o.rounds(&s)
	if o.Faithful {
		if s, err = s.Faithful(); err != nil {
			return Suite{}, err
		}
	}
	// A study's figures follow what the flags kept of the suite: a figure of a target or path
	// the flags replaced has nothing to stand beside.
	if o.Kubeconfig != "" || o.Context != "" || len(o.Datapaths) > 0 || len(o.Paths) > 0 {
		s.Reference = s.Reference.within(s)
	}
	s.fillDefaults()
	if err := s.Validate(); err != nil {
		return Suite{}, err
	}
	return s, nil
}

// targets applies the overrides of the targets: a remote cluster or one local cluster per
// datapath replacing them, an external host and a secondary network of the remote ones, the
// local clusters' settings, and a target per
// CRI and per policy variant.
func (o Overrides) targets(targets []Target) ([]Target, error) {
	if o.Kubeconfig != "" || o.Context != "" {
		name := o.Context
		if name == "" {
			name = "remote"
		}
		targets = []Target{{Name: name, Kubeconfig: o.Kubeconfig, Context: o.Context}}
	}
	if o.External != "" {
		for i := range targets {
			if targets[i].Local == nil {
				targets[i].External = &External{Address: o.External, GatewayAddress: o.ExternalGateway, TokenFile: o.ExternalTokenFile, CAFile: o.ExternalCAFile}
			}
		}
	}
	if o.SecondaryNetwork != "" {
		for i := range targets {
			if targets[i].Local == nil {
				targets[i].SecondaryNetwork = o.SecondaryNetwork
			}
		}
	}
	if len(o.Datapaths) > 0 {
		targets = nil
		for _, dp := range o.Datapaths {
			targets = append(targets, Target{Name: dp, Local: &Local{Name: ClusterNameFor(dp), Datapath: dp}})
		}
	}
	for _, t := range targets {
		if l := t.Local; l != nil {
			l.Datapath = or(o.Datapath, l.Datapath)
			l.ProxyMode = or(o.ProxyMode, l.ProxyMode)
			l.Kubernetes = or(o.Kubernetes, l.Kubernetes)
			l.Name = or(o.LocalCluster, l.Name)
		}
	}
	var err error
	if len(o.CRIs) > 0 {
		if targets, err = withCRIVariants(targets, o.CRIs); err != nil {
			return nil, err
		}
	}
	if len(o.NetworkPolicies) > 0 {
		if targets, err = withPolicyVariants(targets, o.NetworkPolicies); err != nil {
			return nil, err
		}
	}
	return targets, nil
}

// or is v, or else the value it overrides.
func or(v, otherwise string) string {
	if v != "" {
		return v
	}
	return otherwise
}

// rounds applies the overrides of the rounds and their samples.
func (o Overrides) rounds(s *Suite) {
	if o.Repetitions != 0 {
		s.Repetitions = o.Repetitions
	}
	if o.Duration != 0 {
		s.Duration = Duration{o.Duration}
	}
	switch {
	case o.NoWarmup:
		s.Warmup = Warmup{Off: true}
	case o.Warmup != 0:
		s.Warmup = Warmup{Duration: o.Warmup}
	}
	if o.Seed != 0 {
		s.Seed = o.Seed
	}
	if o.Precision != 0 {
		s.Precision = Fraction(max(o.Precision, 0))
		if o.Precision < 0 {
			s.Budget, s.Margin = Duration{}, 0
		}
	}
	if o.Margin != 0 {
		s.Margin = Fraction(o.Margin)
	}
	if o.Budget != 0 {
		s.Budget = Duration{o.Budget}
	}
	if o.Pods != "" {
		s.Pods = o.Pods
	}
	if o.Profile {
		s.Profile = true
	}
}

// InvalidError is a suite refused by its validation (Validate): its fields may have been set
// by the suite file or, through Resolve, by the command line's flags.
type InvalidError struct{ Err error }

func (e *InvalidError) Error() string { return e.Err.Error() }

// Unwrap returns the validation's errors.
func (e *InvalidError) Unwrap() error { return e.Err }

// ClusterNameFor names the local cluster of a datapath in a side-by-side run; cluster names
// are short (they name host links), datapath names need not be.
func ClusterNameFor(datapath string) string {
	name := strings.NewReplacer("flannel", "fl", "cilium", "ci", "-", "").Replace(datapath)
	if len(name) > 11 {
		name = name[:11]
	}
	return name
}

// ParsePairs reads --pairs: a comma-separated list of concurrency levels, e.g. "1,10,40".
func ParsePairs(list string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, &setting.Error{Name: "pairs", Value: strconv.Quote(f), Want: "expected a comma-separated list of pair counts such as 1,10,40"}
		}
		out = append(out, n)
	}
	return out, nil
}
