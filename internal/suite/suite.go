// Package suite defines what a run measures: targets x paths x workloads x repetitions, read
// from YAML or built from flags, with defaults, validation that names the offending field,
// and expansion into the matrix the runner interleaves. A suite file's schema is versioned
// (apiVersion: cnibench/v1; a file without one is read as cnibench/v1).
package suite

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/setting"
	"github.com/cnibench/cnibench/internal/yamlerr"
	"sigs.k8s.io/yaml"
)

// Suite is the whole study of one run.
//
// A suite file may say which version of this schema it is written in, at its top:
// "apiVersion: cnibench/v1", the only one so far (APIVersions). A file without it is read as
// cnibench/v1. A version this build does not know is refused, naming the versions it accepts,
// so that a file written for another schema is never read with a changed meaning.
type Suite struct {
	// APIVersion is the schema's version; a suite once read always carries it (absent is
	// APIVersion), so the suite a run stores says which schema it was written in.
	APIVersion string     `json:"apiVersion,omitempty"`
	Targets    []Target   `json:"targets,omitempty"`
	Paths      []string   `json:"paths"`
	Workloads  []Workload `json:"workloads"`
	// Pairs lists the concurrency levels: how many client/server pairs run each workload at
	// the same time. Default [1].
	Pairs []int `json:"pairs,omitempty"`
	// Runtimes lists the RuntimeClasses every target is measured under, side by side in one
	// cluster (each pod names its RuntimeClass). Empty: the cluster's default handler.
	Runtimes []string `json:"runtimes,omitempty"`
	// Tunings lists the kernel tuning profiles every local target is measured under, side by
	// side in one cluster (each pod carries its profile's sysctls): builtin names or YAML
	// files (internal/tuning). Empty: the kernel's own values.
	Tunings []string `json:"tunings,omitempty"`
	// Families lists the IP families every target's traffic takes, side by side in one cluster
	// (ipv4, ipv6): each measured over its own pods' and Services' addresses of that family.
	// Empty: the cluster's primary family.
	Families    []string `json:"families,omitempty"`
	Repetitions int      `json:"repetitions"`
	// Duration of each measured sample, and of each warm-up sample (discarded), or off for
	// no warm-up round.
	Duration Duration `json:"duration"`
	Warmup   Warmup   `json:"warmup"`
	// Seed fixes the shuffled order of every round; 0 picks one, which is stored with the run.
	Seed int64 `json:"seed,omitempty"`
	// Precision, when set, makes Repetitions a minimum: the run then adds interleaved rounds
	// while the headline figure of some workload has a 95 % CI half-width above this fraction
	// of its mean (written "5%"), until Budget runs out.
	Precision Fraction `json:"precision,omitempty"`
	// Margin is the equivalence margin of a run with Precision: a group also gets rounds while
	// a comparison its verdict prints is undecided, neither different at a strict level nor
	// with its ratio's 95 % interval inside ±Margin (written "2%"; for UDP loss, a margin in
	// points that grows with the loss, analysis.EquivalenceMargin); default DefaultMargin.
	Margin Fraction `json:"margin,omitempty"`
	// Budget bounds the wall time of a run with Precision, setup included; default
	// DefaultBudget.
	Budget Duration `json:"budget,omitzero"`
	// KeepAwake keeps the client node's CPUs out of idle during request/response samples
	// (tcp-rr, tcp-crr), so that their latency is the datapath's and not a VM's wake-up;
	// default true.
	KeepAwake *bool `json:"keepAwake,omitempty"`
	// Pods says how long the run's pods live. PodsRun (the default) deploys each target's pods
	// for its largest pairs level once, for the whole run. PodsRound keeps one pair per target
	// up and, in each round, brings one target to one pairs level for that level's samples and
	// back to one pair after them: a sample then shares the nodes with its own pods only, not
	// with every target's at every level, and pod startup and memory are measured every round.
	Pods string `json:"pods,omitempty"`
	// Reference holds a published study's figures, which reports show beside the run's.
	Reference *Reference `json:"reference,omitempty"`
	// Profile records where the host's CPU time goes during every measured sample of a local
	// cluster (perf, all CPUs, kernel and user stacks), stored with the sample; a remote
	// cluster's samples say it is not available there.
	Profile bool `json:"profile,omitempty"`
}

// APIVersion is the version of the suite schema this build writes, and reads where a file
// names none.
const APIVersion = "cnibench/v1"

// APIVersions lists the versions of the suite schema this build reads.
func APIVersions() []string { return []string{APIVersion} }

// checkAPIVersion refuses a version of the suite schema this build does not read.
func checkAPIVersion(v string) error {
	if v == "" || slices.Contains(APIVersions(), v) {
		return nil
	}
	return &setting.Error{Name: "apiVersion", Value: strconv.Quote(v),
		Want: "expected " + strings.Join(APIVersions(), " or ") + " (or none, which means " + APIVersion + "): this build reads no other version of the suite schema"}
}

// How long the run's pods live (Suite.Pods).
const (
	PodsRun   = "run"
	PodsRound = "round"
)

// PerRound reports whether the pods of a pairs level live only for its samples in each round.
func (s Suite) PerRound() bool { return s.Pods == PodsRound }

// AwakeRR reports whether request/response samples keep the CPUs awake.
func (s Suite) AwakeRR() bool { return s.KeepAwake == nil || *s.KeepAwake }

// DefaultBudget is the time budget of a run with a precision target and no budget of its own.
const DefaultBudget = 10 * time.Minute

// DefaultMargin is the equivalence margin of a run with a precision target and no margin of
// its own: two configurations within ±2 % of each other are the same for a platform team's
// choice, and a run need not pay rounds to tell them apart.
const DefaultMargin = 0.02

// Fraction is a share written as a percentage ("5%") or a fraction (0.05) in YAML.
type Fraction float64

// MarshalJSON writes the fraction as a percentage.
func (f Fraction) MarshalJSON() ([]byte, error) {
	return []byte(`"` + strconv.FormatFloat(float64(f)*100, 'g', -1, 64) + `%"`), nil
}

// UnmarshalJSON reads "5%" or 0.05, and off (which YAML also reads as false) as none.
func (f *Fraction) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "off" || s == "false" {
		*f = 0
		return nil
	}
	v, err := ParseFraction(s)
	if err != nil {
		return err
	}
	*f = Fraction(v)
	return nil
}

// ParseFraction reads "5%" or "0.05" as 0.05.
func ParseFraction(s string) (float64, error) {
	num, pct := strings.CutSuffix(strings.TrimSpace(s), "%")
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("expected a percentage such as 5%%, got %q", s)
	}
	if pct {
		v /= 100
	}
	return v, nil
}

// Target is one cluster to measure: the embedded local cluster (Local set) or an existing
// cluster reached through a kubeconfig.
type Target struct {
	Name       string `json:"name"`
	Kubeconfig string `json:"kubeconfig,omitempty"`
	Context    string `json:"context,omitempty"`
	Local      *Local `json:"local,omitempty"`
	// Image is the tools image a remote cluster's nodes pull, replacing --image for this
	// target: two clusters of one's own may pull from registries of their own.
	Image string `json:"image,omitempty"`
	// NetworkPolicy is the policy variant the target is measured under; nil creates none.
	NetworkPolicy *NetworkPolicy `json:"networkPolicy,omitempty"`
	// Runtimes lists the RuntimeClasses this target is measured under, replacing the suite's.
	Runtimes []string `json:"runtimes,omitempty"`
	// Runtime is the RuntimeClass of the target's pods, set by Expand from the runtimes.
	Runtime string `json:"-"`
	// Tunings lists the tuning profiles this target is measured under, replacing the suite's.
	Tunings []string `json:"tunings,omitempty"`
	// Tuning is the tuning profile of the target's pods, set by Expand from the tunings.
	Tuning string `json:"-"`
	// Families lists the IP families this target's traffic takes, replacing the suite's.
	Families []string `json:"families,omitempty"`
	// Family is the IP family of the target's traffic, set by Expand from the families; ""
	// is the cluster's primary one.
	Family string `json:"-"`
	// External is the server outside a remote cluster that the egress paths reach; a local
	// cluster has its own.
	External *External `json:"external,omitempty"`
	// GatewayClassName is the GatewayClass of a remote cluster that serves the gateway path's
	// split (two targets naming two classes compare implementations); a local cluster deploys
	// Traefik.
	GatewayClassName string `json:"gatewayClassName,omitempty"`
	// Gateway is the Gateway API implementation a local cluster's gateway path goes through:
	// traefik (the default, deployed by the run) or envoy (Envoy Gateway, which the run's
	// cluster then runs). Two targets may share one local cluster when they differ in it:
	// both implementations measured side by side, interleaved, on the same nodes.
	Gateway string `json:"gateway,omitempty"`
	// SecondaryNetwork is the NetworkAttachmentDefinition of a remote cluster that the
	// secondary paths take, NAMESPACE/NAME or NAME (in the run's namespace): every pod of the
	// pod network asks for it beside the cluster network. A local cluster offers its own
	// (local.multus).
	SecondaryNetwork string `json:"secondaryNetwork,omitempty"`
}

// GatewayImpl is the target's Gateway API implementation on a local cluster: its own, else
// Traefik. A remote target's is its GatewayClassName.
func (t Target) GatewayImpl() string {
	if t.Gateway == "" {
		return lab.GatewayTraefik
	}
	return t.Gateway
}

// External is a machine outside a remote cluster running `cnibench agent serve`.
type External struct {
	// Address is the agent's host:port; the egress path reaches the host directly.
	Address string `json:"address"`
	// GatewayAddress is another address of the same host that the cluster routes through its
	// egress gateway (an egress gateway policy selecting it); the egress-gateway path needs it
	// and a node labelled cnibench.dev/egress-gateway (value: the address the host sees, or
	// "true" for the node's InternalIP).
	GatewayAddress string `json:"gatewayAddress,omitempty"`
	// TokenFile holds the token the agent was started with (its --token-file).
	TokenFile string `json:"tokenFile,omitempty"`
	// CAFile is the PEM certificate of the CA that signed the agent's TLS certificate (its
	// --tls-cert); set, the agent is reached over HTTPS trusting that CA alone.
	CAFile string `json:"caFile,omitempty"`
}

// Local describes an embedded local cluster target: the local cluster's one shape, shared
// with `cluster create` and the cluster builder.
type Local = lab.LocalConfig

// Workload is the YAML form of engine.Workload.
type Workload struct {
	Kind    string `json:"kind"`
	Streams int    `json:"streams,omitempty"`
	Size    int    `json:"size,omitempty"` // message or datagram size in bytes
	Rate    string `json:"rate,omitempty"` // udp-stream offered rate, iperf3 -b syntax
	// MaxLoss makes a udp-stream sample an RFC 2544 throughput search up to Rate: the highest
	// offered rate whose loss stays at or below this percentage (0: none lost).
	MaxLoss *float64 `json:"maxLoss,omitempty"`
	Threads int      `json:"threads,omitempty"` // cpu and memory workers; 0: one per CPU
	Tool    string   `json:"tool,omitempty"`    // the engine, where several can measure the kind
	// Weight is a gateway-split's percentage to the first backend.
	Weight int `json:"weight,omitempty"`
	// VUs are a gateway-split's k6 virtual users: one workload per level.
	VUs []int `json:"vus,omitempty"`
	// Duration is this workload's measured sample duration, replacing the suite's (a study
	// that ran its streams longer than its request/response tests); zero keeps the suite's.
	Duration Duration `json:"duration,omitzero"`
}

// SampleDuration is how long a measured sample of the workload lasts in suite s.
func (w Workload) SampleDuration(s Suite) time.Duration {
	if w.Duration.Duration > 0 {
		return w.Duration.Duration
	}
	return s.Duration.Duration
}

// expandVUs makes one workload of each virtual-user level of a gateway-split, so that every
// level is a cell of its own, interleaved and summarised like any workload.
func expandVUs(ws []Workload) []Workload {
	var out []Workload
	for _, w := range ws {
		if len(w.VUs) <= 1 {
			out = append(out, w)
			continue
		}
		for _, n := range w.VUs {
			one := w
			one.VUs = []int{n}
			out = append(out, one)
		}
	}
	return out
}

// Duration is a time.Duration written as "5s" in YAML.
type Duration struct{ time.Duration }

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return []byte(`"` + d.String() + `"`), nil }

// UnmarshalJSON reads "5s"-style durations.
func (d *Duration) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("expected a duration such as 5s, got %s", b)
	}
	d.Duration = v
	return nil
}

// Warmup is the duration of each warm-up sample, or Off: no warm-up round, the first round's
// samples counted (a run that checks plumbing, or a tool that needs no warm-up).
type Warmup struct {
	time.Duration
	Off bool
}

// MarshalJSON writes the duration as a string, or off.
func (w Warmup) MarshalJSON() ([]byte, error) {
	if w.Off {
		return []byte(`"off"`), nil
	}
	return Duration{w.Duration}.MarshalJSON()
}

// UnmarshalJSON reads "2s"-style durations, and off (which YAML also reads as false).
func (w *Warmup) UnmarshalJSON(b []byte) error {
	if s := strings.Trim(string(b), `"`); s == "off" || s == "false" {
		*w = Warmup{Off: true}
		return nil
	}
	var d Duration
	if err := d.UnmarshalJSON(b); err != nil {
		return fmt.Errorf("expected a duration such as 2s, or off, got %s", b)
	}
	*w = Warmup{Duration: d.Duration}
	return nil
}

// Default is the suite `cnibench run` runs with no arguments: the reference studies' core
// matrix on the local cluster, as precise as ten minutes allow on a 2-core machine.
func Default() Suite {
	return Suite{
		Targets: []Target{{Name: "local", Local: new(Local{}.WithDefaults())}},
		// localhost is the floor of every latency figure: the same request/response inside
		// one pod, no path at all.
		Paths: []string{HostNetwork, SameNode, CrossNode, Localhost},
		Workloads: []Workload{
			{Kind: engine.TCPStream, Streams: 1},
			{Kind: engine.TCPStream, Streams: 4},
			{Kind: engine.UDPStream, Size: 1300, Rate: "500M"},
			{Kind: engine.TCPRR, Size: 64},
			{Kind: engine.TCPCRR, Size: 64},
		},
		// Three rounds at least, then more where a headline figure is still wider than
		// ±5 %, within ten minutes: decision-grade figures for the time a user waits.
		Repetitions: 3,
		Precision:   0.05,
		Budget:      Duration{DefaultBudget},
		Duration:    Duration{4 * time.Second},
		Warmup:      Warmup{Duration: 2 * time.Second},
	}
}

// fileRepetitions is the rounds of a suite file that names none: it has no precision target
// unless it sets one, so its rounds are all it gets.
const fileRepetitions = 5

// Load reads a suite file; fields it omits take the defaults, and unknown fields are errors.
func Load(path string) (Suite, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Suite{}, fmt.Errorf("read suite %s: %w", path, err)
	}
	return Parse(data)
}

// Parse reads a suite from YAML, of a version of the schema this build reads (absent:
// cnibench/v1).
func Parse(data []byte) (Suite, error) {
	// The version first: another version's fields are not this one's to report as unknown.
	var head struct {
		APIVersion string `json:"apiVersion"`
	}
	if err := yaml.Unmarshal(data, &head); err == nil {
		if err := checkAPIVersion(head.APIVersion); err != nil {
			return Suite{}, &InvalidError{Err: err}
		}
	}
	var s Suite
	if err := checkFields(data); err != nil {
		return Suite{}, fmt.Errorf("suite: %w", err)
	}
	if err := yaml.UnmarshalStrict(data, &s); err != nil {
		// A document that is one value, not fields (what YAML libraries read as a string
		// where checkFields's reads a null), has no field to name.
		var whole *json.UnmarshalTypeError
		if errors.As(err, &whole) && whole.Field == "" {
			return Suite{}, fmt.Errorf("suite: top level: expected the suite's fields (a mapping such as \"paths: [cross-node]\"), got a %s", whole.Value)
		}
		return Suite{}, fmt.Errorf("suite: %w", yamlerr.Locate(data, err))
	}
	s.fillDefaults()
	return s, s.Validate()
}

// fillDefaults completes a partial suite from Default.
func (s *Suite) fillDefaults() {
	d := Default()
	if s.APIVersion == "" {
		s.APIVersion = APIVersion
	}
	if len(s.Targets) == 0 {
		s.Targets = d.Targets
	}
	if len(s.Paths) == 0 {
		s.Paths = d.Paths
	}
	if len(s.Workloads) == 0 {
		s.Workloads = d.Workloads
	}
	s.Workloads = expandVUs(s.Workloads)
	if len(s.Pairs) == 0 {
		s.Pairs = []int{1}
	}
	if s.Repetitions == 0 {
		s.Repetitions = fileRepetitions
	}
	if s.Duration.Duration == 0 {
		s.Duration = d.Duration
	}
	if s.Warmup.Duration == 0 && !s.Warmup.Off {
		s.Warmup = d.Warmup
	}
	if s.Precision > 0 && s.Budget.Duration == 0 {
		s.Budget = Duration{DefaultBudget}
	}
	if s.Precision > 0 && s.Margin == 0 {
		s.Margin = DefaultMargin
	}
	for i := range s.Targets {
		if t := &s.Targets[i]; t.Local != nil {
			*t.Local = t.Local.WithDefaults()
		}
	}
}

// YAML renders the effective suite, stored with the run so it can be re-run exactly.
func (s Suite) YAML() string {
	out, err := yaml.Marshal(s)
	if err != nil {
		return fmt.Sprintf("# cannot render suite: %v\n", err)
	}
	return string(out)
}

// Combo is one cell of the matrix: what one sample measures.
type Combo struct {
	Target   string
	Path     string
	Workload Workload
	Pairs    int
}

// Matrix expands the suite into its cells, targets outermost, in the suite's order. Every
// dimension multiplies alike: target x path x workload x pairs.
func (s Suite) Matrix() []Combo {
	pairs := s.Pairs
	if len(pairs) == 0 {
		pairs = []int{1}
	}
	var out []Combo
	for _, t := range s.Targets {
		for _, p := range s.Paths {
			for _, w := range s.Workloads {
				// A split runs through the gateway only, and only a split does.
				if engine.InPod(w.Kind) || (w.Kind == engine.GatewaySplit) != (p == Gateway) {
					continue
				}
				for _, n := range pairs {
					out = append(out, Combo{Target: t.Name, Path: p, Workload: w, Pairs: n})
				}
			}
		}
		// Workloads inside one pod take no path: one cell each, whatever the paths.
		for _, w := range s.Workloads {
			if engine.InPod(w.Kind) {
				for _, n := range pairs {
					out = append(out, Combo{Target: t.Name, Path: InPod, Workload: w, Pairs: n})
				}
			}
		}
	}
	return out
}

// Expand returns the suite with one target per target and variant of each dimension, in
// their order (dimensions): "local" measured under runc and runsc becomes "local.runc" and
// "local.runsc", which share local's cluster, and under the tunings default and throughput
// "local.runc.default", "local.runc.throughput" and so on; the families ipv4 and ipv6 add
// ".ipv4" and ".ipv6". A target's own lists replace the suite's. The runner measures the
// expanded suite; the run stores the suite as written.
func (s Suite) Expand() Suite {
	s = s.withFamilies()
	targets := s.Targets
	for _, d := range dimensions() {
		targets = d.expand(s, targets)
	}
	s.Targets = targets
	for _, d := range dimensions() {
		*d.suite(&s) = nil
	}
	return s
}

// MaxPairs is the largest concurrency a suite may ask for; the local cluster's kubelets
// admit enough pods for it on two nodes.
const MaxPairs = 120

// MostPairs is the largest of the suite's concurrency levels: the pairs every target deploys.
func (s Suite) MostPairs() int {
	n := 1
	for _, p := range s.Pairs {
		n = max(n, p)
	}
	return n
}
