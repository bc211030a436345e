package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/internal/cluster/datapath"
	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/setting"
	"github.com/cnibench/cnibench/internal/suite"
	"golang.org/x/sync/errgroup"
)

// provider makes a target's cluster available to the run and takes back what it made: the
// embedded local cluster, created when absent, or a remote cluster reached by kubeconfig. The
// runner only measures what a provider gives it.
type provider interface {
	// ensure returns a client of the cluster, the tools image its nodes run, and the
	// fingerprint facts the provider knows better than the cluster can tell.
	ensure(ctx context.Context) (provided, error)
	// releasesObjects reports whether release removes the run's objects with the cluster.
	releasesObjects() bool
	// release undoes what ensure made; it runs after Ctrl-C too, with a context of its own.
	release(ctx context.Context) error
	// lost says what of the cluster is down, among the given nodes and the control plane,
	// after a sample failed.
	lost(ctx context.Context, client *kube.Client, nodes []string) loss
}

// provided is what a provider hands the runner.
type provided struct {
	client   *kube.Client
	image    string
	facts    map[string]string
	external *externalHost // nil: the egress paths cannot be measured
	gateway  gatewayOffer
}

var (
	_ provider = (*localProvider)(nil)
	_ provider = (*remoteProvider)(nil)
)

// providerFor picks the provider of a suite target; the targets of one cluster (its runtimes)
// share one.
func (r *run) providerFor(t suite.Target) provider {
	key := clusterKey(t)
	if p, ok := r.providers[key]; ok {
		return p
	}
	var p provider = &remoteProvider{target: t, image: cmp.Or(t.Image, r.opts.Image)}
	if t.Local != nil {
		p = &localProvider{r: r, spec: *t.Local, runtimes: r.runtimesOf(t.Local.Name)}
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

// localProvider uses the named local cluster when it exists and matches, or creates it and
// deletes it at the end unless the run keeps it.
type localProvider struct {
	r        *run
	spec     suite.Local
	runtimes []string  // the handlers the run's pods name
	out      io.Writer // the create's progress; nil: indented below the run's
	created  bool
	got      *provided // once ensured: the targets of the cluster's runtimes share it
}

func (p *localProvider) ensure(ctx context.Context) (provided, error) {
	if p.got != nil {
		return *p.got, nil
	}
	got, err := p.connect(ctx)
	if err == nil {
		p.got = &got
	}
	return got, err
}

func (p *localProvider) connect(ctx context.Context) (provided, error) {
	r, l := p.r, p.spec
	spec, err := r.opts.Layout.ReadSpec(l.Name)
	switch {
	case err == nil && spec.Status != cluster.StatusReady:
		return provided{}, fmt.Errorf("local cluster %s is %s; delete it (cnibench cluster delete --name %s) and run again", l.Name, spec.Status, l.Name)
	case err == nil && (spec.Datapath != l.Datapath || spec.ProxyMode != l.ProxyMode || spec.Nodes < l.Nodes || spec.Kubernetes() != l.Kubernetes || spec.ContainerRuntime() != l.CRI):
		return provided{}, fmt.Errorf("local cluster %s exists with datapath %s, kube-proxy %s, %d nodes, Kubernetes %s, CRI %s; the suite asks for %s, %s, %d, %s, %s: delete it or name another cluster",
			l.Name, spec.Datapath, spec.ProxyMode, spec.Nodes, spec.Kubernetes(), spec.ContainerRuntime(), l.Datapath, l.ProxyMode, l.Nodes, l.Kubernetes, l.CRI)
	case err == nil && l.MTU != 0 && spec.UnderlayMTU() != l.MTU:
		return provided{}, fmt.Errorf("local cluster %s exists with underlay MTU %d; the suite asks for %d: delete it or name another cluster", l.Name, spec.UnderlayMTU(), l.MTU)
	case err == nil && l.IPFamily != "" && spec.Family() != l.IPFamily:
		return provided{}, fmt.Errorf("local cluster %s exists with IP family %s; the suite asks for %s: delete it or name another cluster", l.Name, spec.Family(), l.IPFamily)
	case err == nil && l.Registry && !spec.HasRegistry:
		return provided{}, fmt.Errorf("local cluster %s has no lab registry; the suite asks for one: delete it or name another cluster", l.Name)
	case err == nil && !subset(p.runtimes, spec.Handlers()):
		return provided{}, fmt.Errorf("local cluster %s offers runtimes %s; the suite asks for %s: delete it or name another cluster",
			l.Name, strings.Join(spec.Handlers(), ", "), strings.Join(p.runtimes, ", "))
	case err == nil:
		r.progress("using local cluster %s", l.Name)
	default:
		r.progress("creating local cluster %s (%s, kube-proxy %s, %d nodes, Kubernetes %s, %s)", l.Name, l.Datapath, l.ProxyMode, l.Nodes, l.Kubernetes, l.CRI)
		err = cluster.Create(ctx, cluster.Options{
			LocalConfig: l, Wait: 3 * time.Minute, Runtimes: append(lab.HandlersFor(l.CRI)[:1], p.runtimes...), GatewayAPI: len(splitWeights(r.opts.Suite)) > 0,
			Out: cmp.Or(p.out, indent(r.opts.Out)), Layout: r.opts.Layout, Cache: r.opts.Cache,
		})
		if err != nil {
			// Create removed what it made; nothing is ours to delete.
			return provided{}, err
		}
		p.created = true
		if spec, err = r.opts.Layout.ReadSpec(l.Name); err != nil {
			return provided{}, err
		}
	}
	facts := map[string]string{"cni": spec.Datapath, "kube_proxy_mode": spec.ProxyMode, "datapath": spec.Datapath,
		"cluster": "cnibench local " + spec.Name, "host_cgroups": spec.Cgroups, "cri": spec.ContainerRuntime(),
		"node_image_store": cmp.Or(spec.ImageStore, cluster.ImageStoreDisk), "underlay_mtu": strconv.Itoa(spec.UnderlayMTU()),
		"cluster_ip_family": spec.Family()}
	if dp, err := datapath.Lookup(spec.Datapath); err == nil {
		if wf, ok := dp.(datapath.WithFingerprint); ok {
			for k, v := range wf.Fingerprint() {
				facts[k] = v
			}
		}
	}
	if _, own := facts["egress_gateway_impl"]; !own && spec.HasExternal {
		facts["egress_gateway_impl"] = "plain: a route to the gateway node, nftables SNAT there"
	}
	image := r.opts.Image
	if image == "" {
		image = spec.Images.Tools
	}
	client, err := kube.Connect(r.opts.Layout.Kubeconfig(spec.Name), "")
	got := provided{client: client, image: image, facts: facts}
	got.gateway = gatewayOffer{available: spec.GatewayAPI,
		why: fmt.Sprintf("local cluster %s was created without the Gateway API split: delete it and the run recreates it with it (or cluster create --gateway-api)", spec.Name)}
	if e, ok := spec.External(); ok {
		got.external = &externalHost{control: e.Control, direct: e.Direct, viaGateway: e.ViaGateway, gatewayNode: e.GatewayNode,
			tokenFile: r.opts.Layout.ExternalTokenFile(spec.Name), caFile: r.opts.Layout.CAFile(spec.Name)}
	}
	return got, err
}

// concurrentCreates bounds the local clusters a run creates at once. Five at once took 93 s
// where one after the other took 141 s (two of them Cilium's, on two vCPUs), each create
// stretched towards its 3-minute wait: three keeps most of the gain with room to spare.
const concurrentCreates = 3

// createMissing creates the run's absent local clusters at once, each create's progress
// prefixed with its cluster's name; a single one is left to its target's prepare. A failed
// create cancels the others, and teardown releases those already made, as after any failure.
func (r *run) createMissing(ctx context.Context) error {
	var missing []*localProvider
	for _, t := range r.opts.Suite.Targets {
		if t.Local == nil {
			continue
		}
		p, ok := r.providerFor(t).(*localProvider)
		if !ok || p.got != nil || slices.Contains(missing, p) {
			continue
		}
		if _, err := r.opts.Layout.ReadSpec(t.Local.Name); errors.Is(err, fs.ErrNotExist) {
			missing = append(missing, p)
		}
	}
	if len(missing) < 2 {
		return nil
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(concurrentCreates)
	for _, p := range missing {
		p.out = prefixWriter{w: r.opts.Out, prefix: "    " + p.spec.Name + ": "}
		g.Go(func() error {
			_, err := p.ensure(gctx)
			return err
		})
	}
	return g.Wait()
}

// subset reports whether every element of a is in b.
func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

func (p *localProvider) releasesObjects() bool { return p.created && !p.r.opts.Keep }

func (p *localProvider) release(ctx context.Context) error {
	if !p.releasesObjects() {
		return nil
	}
	p.r.progress("deleting local cluster %s (--keep keeps it)", p.spec.Name)
	return cluster.Delete(ctx, cluster.DeleteOptions{Name: p.spec.Name, Layout: p.r.opts.Layout})
}

// remoteProvider connects to an existing cluster, which it never changes beyond the run's own
// objects; its nodes pull the tools image from a registry. Used by pointer: the targets of a
// cluster's runtimes share it, and the target it holds is not comparable, so a value would
// panic wherever providers are compared.
type remoteProvider struct {
	target suite.Target
	image  string
}

func (p *remoteProvider) ensure(context.Context) (provided, error) {
	client, err := kube.Connect(p.target.Kubeconfig, p.target.Context)
	if err != nil {
		return provided{}, err
	}
	if p.image == "" {
		return provided{}, fmt.Errorf("target %s: %w", p.target.Name, &setting.Error{Name: "image", Want: "required for a remote cluster, or the target's image (`cnibench image push REF` builds the tools image and pushes it to a registry the nodes can pull from)"})
	}
	got := provided{client: client, image: p.image, facts: map[string]string{"cluster": "context " + cmp.Or(client.Context, "(none)") + " at " + client.Server}}
	got.gateway = gatewayOffer{available: p.target.GatewayClassName != "", className: p.target.GatewayClassName,
		why: "a remote cluster needs the target's gatewayClassName (its Gateway API implementation)"}
	if e := p.target.External; e != nil {
		host, _, _ := net.SplitHostPort(e.Address) // validated
		got.external = &externalHost{control: e.Address, direct: host, viaGateway: e.GatewayAddress, tokenFile: e.TokenFile, caFile: e.CAFile}
	}
	return got, nil
}

func (*remoteProvider) releasesObjects() bool         { return false }
func (*remoteProvider) release(context.Context) error { return nil }
