package runner

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"slices"

	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/setting"
	"github.com/cnibench/cnibench/internal/suite"
	"github.com/cnibench/cnibench/internal/tuning"
	"golang.org/x/sync/errgroup"
)

// Provider makes a target's cluster available to the run and takes back what it made: the
// embedded local cluster (package provider/local), created when absent, or a remote cluster
// reached by kubeconfig. The runner only measures what a provider gives it.
type Provider interface {
	// Ensure returns a client of the cluster, the tools image its nodes run, and the
	// fingerprint facts the provider knows better than the cluster can tell.
	Ensure(ctx context.Context) (Provided, error)
	// ReleasesObjects reports whether Release removes the run's objects with the cluster.
	ReleasesObjects() bool
	// Release undoes what Ensure made; it runs after Ctrl-C too, with a context of its own.
	Release(ctx context.Context) error
	// Lost says what of the cluster is down, among the given nodes and the control plane,
	// after a sample failed.
	Lost(ctx context.Context, client *kube.Client, nodes []string) Loss
}

// Provided is what a provider hands the runner.
type Provided struct {
	Client *kube.Client
	Image  string // the tools image the run's pods run
	Facts  map[string]string
	// External is the server outside the cluster; nil: the egress paths cannot be measured.
	External *External
	Gateway  GatewayOffer
	// Secondary is the network attachment the secondary path takes.
	Secondary SecondaryOffer
	// ProfileDir is where the CPU profiles of the cluster's samples are recorded: set only by a
	// provider whose nodes run on this host's CPUs (a local cluster).
	ProfileDir string
}

// External is the host outside a cluster a provider offers for the egress paths: its agent
// runs their servers and reports the source address each client's traffic arrives with.
type External struct {
	Control    string // host:port of its agent
	Direct     string // address the egress path targets (IPv4, or a name)
	ViaGateway string // address the egress-gateway path targets; empty: no gateway
	// Direct6 and ViaGateway6 are the same over IPv6; empty where the host has none.
	Direct6, ViaGateway6 string
	// GatewayNode is the cluster's egress gateway node where the provider knows it; empty:
	// found from the node's label at prepare.
	GatewayNode string
	TokenFile   string // the agent's token
	CAFile      string // the CA of the agent's TLS certificate; empty: plain HTTP
}

// SecondaryOffer is what a provider says of a target's secondary network: the network
// attachment its pods can ask for beside the cluster network.
type SecondaryOffer struct {
	// Network is the NetworkAttachmentDefinition, namespace/name or a name in the run's
	// namespace, as a pod's k8s.v1.cni.cncf.io/networks annotation names it; empty: none.
	Network string
	Why     string // why none, when none
}

// ProviderRun is what a provider is told of the run it serves.
type ProviderRun struct {
	// Runtimes lists the RuntimeClass handlers the run's targets on the cluster name.
	Runtimes []string
	// GatewayAPI: the suite measures the Gateway API split.
	GatewayAPI bool
	// EnvoyGateway: a target of the suite on the cluster goes through Envoy Gateway.
	EnvoyGateway bool
	// Image is the tools image the run was given; empty: the cluster's own.
	Image string
	// Keep keeps a cluster the provider creates.
	Keep bool
	// Progress prints one of the run's status lines.
	Progress func(format string, args ...any)
	// Out takes a create's own progress, nested below the run's.
	Out io.Writer
}

// LocalProviders makes the provider of a local cluster the suite names; the run keeps one per
// cluster, shared by the targets of its runtimes.
type LocalProviders func(l suite.Local, run ProviderRun) Provider

// offloader is a provider whose clusters' nodes the run may change: it sets a tuning
// profile's offloads on both ends of every pod's veth and returns the node ends' features as
// fingerprint facts.
type offloader interface {
	SetOffloads(ctx context.Context, client *kube.Client, fixture *kube.Fixture, p tuning.Profile) (map[string]string, error)
}

// runtimeFacter is a provider that knows what runs the pods of a RuntimeClass on its nodes.
type runtimeFacter interface {
	RuntimeFacts(ctx context.Context, runtimeClass string) map[string]string
}

// creator is a provider that creates its cluster when it is absent, so that the run can
// create several at once.
type creator interface {
	Provider
	// Absent reports whether Ensure would create the cluster.
	Absent() bool
	// Create ensures the cluster, the create's progress written to out.
	Create(ctx context.Context, out io.Writer) error
}

var _ Provider = (*remoteProvider)(nil)

// providerFor picks the provider of a suite target; the targets of one cluster (its runtimes)
// share one.
func (r *run) providerFor(t suite.Target) Provider {
	key := clusterKey(t)
	if p, ok := r.providers[key]; ok {
		return p
	}
	var p Provider = &remoteProvider{target: t, image: cmp.Or(t.Image, r.opts.Image)}
	if t.Local != nil {
		split := len(splitWeights(r.opts.Suite)) > 0
		p = r.opts.Local(*t.Local, ProviderRun{Runtimes: r.runtimesOf(t.Local.Name), GatewayAPI: split, EnvoyGateway: split && r.envoyOn(t.Local.Name),
			Image: r.opts.Image, Keep: r.opts.Keep, Progress: r.progress, Out: indent(r.opts.Out)})
	}
	r.providers[key] = p
	return p
}

// runtimesOf lists the runtimes the run's targets ask of a local cluster.
func (r *run) runtimesOf(name string) []string {
	var out []string
	for _, t := range r.opts.Suite.Targets {
		if t.Local != nil && t.Local.Name == name && t.Runtime != "" && !slices.Contains(out, t.Runtime) {
			out = append(out, t.Runtime)
		}
	}
	return out
}

// envoyOn reports whether a target of the run on a local cluster goes through Envoy Gateway.
func (r *run) envoyOn(name string) bool {
	return slices.ContainsFunc(r.opts.Suite.Targets, func(t suite.Target) bool {
		return t.Local != nil && t.Local.Name == name && t.GatewayImpl() == lab.GatewayEnvoy
	})
}

// concurrentCreates bounds the local clusters a run creates at once. Five at once took 93 s
// where one after the other took 141 s (two of them Cilium's, on two vCPUs), each create
// stretched towards its 3-minute wait: three keeps most of the gain with room to spare.
const concurrentCreates = 3

// createMissing creates the run's absent local clusters at once, each create's progress
// prefixed with its cluster's name; a single one is left to its target's prepare. A failed
// create cancels the others, and teardown releases those already made, as after any failure.
func (r *run) createMissing(ctx context.Context) error {
	var missing []creator
	var names []string
	for _, t := range r.opts.Suite.Targets {
		if t.Local == nil {
			continue
		}
		p, ok := r.providerFor(t).(creator)
		if !ok || slices.Contains(missing, p) || !p.Absent() {
			continue
		}
		missing, names = append(missing, p), append(names, t.Local.Name)
	}
	if len(missing) < 2 {
		return nil
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(concurrentCreates)
	for i, p := range missing {
		out := prefixWriter{w: r.opts.Out, prefix: "    " + names[i] + ": "}
		g.Go(func() error { return p.Create(gctx, out) })
	}
	return g.Wait()
}

// remoteProvider connects to an existing cluster, which it never changes beyond the run's own
// objects; its nodes pull the tools image from a registry. It stays in the runner: it needs
// nothing the runner does not compile already. Used by pointer: the targets of a cluster's
// runtimes share it, and the target it holds is not comparable, so a value would panic
// wherever providers are compared.
type remoteProvider struct {
	target suite.Target
	image  string
}

func (p *remoteProvider) Ensure(context.Context) (Provided, error) {
	client, err := kube.Connect(p.target.Kubeconfig, p.target.Context)
	if err != nil {
		return Provided{}, err
	}
	if p.image == "" {
		return Provided{}, fmt.Errorf("target %s: %w", p.target.Name, &setting.Error{Name: "image", Want: "required for a remote cluster, or the target's image (`cnibench image push REF` builds the tools image and pushes it to a registry the nodes can pull from)"})
	}
	got := Provided{Client: client, Image: p.image, Facts: map[string]string{"cluster": "context " + cmp.Or(client.Context, "(none)") + " at " + client.Server}}
	got.Gateway = GatewayOffer{Available: p.target.GatewayClassName != "", ClassName: p.target.GatewayClassName,
		Why: "a remote cluster needs the target's gatewayClassName (its Gateway API implementation)"}
	got.Secondary = SecondaryOffer{Network: p.target.SecondaryNetwork,
		Why: "a remote cluster needs the target's secondaryNetwork (--secondary-network): the NetworkAttachmentDefinition its pods ask for, NAMESPACE/NAME"}
	if e := p.target.External; e != nil {
		host, _, _ := net.SplitHostPort(e.Address) // validated
		got.External = &External{Control: e.Address, TokenFile: e.TokenFile, CAFile: e.CAFile}
		// A user's host serves the family of its addresses; a name, whichever the pods resolve.
		got.External.Direct, got.External.Direct6 = byFamily(host)
		got.External.ViaGateway, got.External.ViaGateway6 = byFamily(e.GatewayAddress)
	}
	return got, nil
}

// byFamily places a user's address by its family: an IPv6 address second, anything else (an
// IPv4 address, a name the pods resolve, or none) first.
func byFamily(addr string) (v4, v6 string) {
	if kube.FamilyOf(addr) == lab.IPv6 {
		return "", addr
	}
	return addr, ""
}

func (*remoteProvider) ReleasesObjects() bool         { return false }
func (*remoteProvider) Release(context.Context) error { return nil }
