// Package local provides a run's local clusters: it uses the named cluster when it exists and
// matches the suite, creates it otherwise and deletes it at the end, and owns everything else
// a run needs of the host that runs the cluster (its daemons' liveness, the nodes' ends of the
// pods' veths, the OCI runtimes' binaries). The runner reaches it through runner.Provider and
// compiles none of the cluster builder.
package local

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/internal/cluster/binaries"
	"github.com/cnibench/cnibench/internal/cluster/datapath"
	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/runner"
	"github.com/cnibench/cnibench/internal/suite"
)

// Clusters are the local clusters of one host: where their state lives and the binaries they
// run.
type Clusters struct {
	Layout cluster.Layout
	Cache  binaries.Cache
}

// Provider returns the provider of one local cluster a run names (runner.LocalProviders).
func (c Clusters) Provider(l suite.Local, run runner.ProviderRun) runner.Provider {
	return &Provider{Clusters: c, spec: l, runtimes: run.Runtimes, run: run}
}

// Provider uses the named local cluster when it exists and matches, or creates it and
// deletes it at the end unless the run keeps it. Used by pointer: the targets of the
// cluster's runtimes share it.
type Provider struct {
	Clusters
	run      runner.ProviderRun
	spec     suite.Local
	runtimes []string  // the handlers the run's pods name
	out      io.Writer // the create's progress; nil: the run's, indented
	created  bool
	got      *runner.Provided // once ensured: the targets of the cluster's runtimes share it
}

var _ runner.Provider = (*Provider)(nil)

// provided is what the provider hands the run.
type provided = runner.Provided

// Ensure returns the cluster, creating it when absent, once for all the targets on it.
func (p *Provider) Ensure(ctx context.Context) (runner.Provided, error) {
	if p.got != nil {
		return *p.got, nil
	}
	got, err := p.connect(ctx)
	if err == nil {
		p.got = &got
	}
	return got, err
}

// Absent reports whether the cluster does not exist yet: Ensure would create it.
func (p *Provider) Absent() bool {
	if p.got != nil {
		return false
	}
	_, err := p.Layout.ReadSpec(p.spec.Name)
	return errors.Is(err, fs.ErrNotExist)
}

// Create ensures the cluster with the create's progress written to out, for a run that
// creates several at once.
func (p *Provider) Create(ctx context.Context, out io.Writer) error {
	p.out = out
	_, err := p.Ensure(ctx)
	return err
}

func (p *Provider) connect(ctx context.Context) (provided, error) {
	l := p.spec
	spec, err := p.Layout.ReadSpec(l.Name)
	switch {
	case err == nil && spec.Status != cluster.StatusReady:
		return provided{}, fmt.Errorf("local cluster %s is %s; delete it (cnibench cluster delete --name %s) and run again", l.Name, spec.Status, l.Name)
	case err == nil:
		if err := spec.Satisfies(l, p.runtimes); err != nil {
			return provided{}, err
		}
		p.run.Progress("using local cluster %s", l.Name)
	default:
		p.run.Progress("creating local cluster %s (%s, kube-proxy %s, %d nodes, Kubernetes %s, %s)", l.Name, l.Datapath, l.ProxyMode, l.Nodes, l.Kubernetes, l.CRI)
		err = cluster.Create(ctx, cluster.Options{
			LocalConfig: l, Wait: 3 * time.Minute, Runtimes: append(lab.HandlersFor(l.CRI)[:1], p.runtimes...), GatewayAPI: p.run.GatewayAPI, EnvoyGateway: p.run.EnvoyGateway,
			Out: cmp.Or(p.out, p.run.Out), Layout: p.Layout, Cache: p.Cache,
		})
		if err != nil {
			// Create removed what it made; nothing is ours to delete.
			return provided{}, err
		}
		p.created = true
		if spec, err = p.Layout.ReadSpec(l.Name); err != nil {
			return provided{}, err
		}
	}
	return p.provided(spec)
}

// provided is what the run gets of a ready cluster: a client, its tools image, the facts its
// state records and its external host.
func (p *Provider) provided(spec cluster.Spec) (runner.Provided, error) {
	image := p.run.Image
	if image == "" {
		image = spec.Images.Tools
	}
	client, err := kube.Connect(p.Layout.Kubeconfig(spec.Name), "")
	got := runner.Provided{Client: client, Image: image, Facts: facts(spec), ProfileDir: p.Layout.Dir(spec.Name)}
	got.Gateway = runner.GatewayOffer{Available: spec.GatewayAPI,
		Why:       fmt.Sprintf("local cluster %s was created without the Gateway API split: delete it and the run recreates it with it (or cluster create --gateway-api)", spec.Name),
		Envoy:     spec.EnvoyGateway,
		EnvoyFact: "envoy-gateway " + binaries.EnvoyGatewayVersion + ", envoy " + binaries.EnvoyVersion + " (its proxy for the run's Gateway, made by the cluster's controller)",
		EnvoyWhy:  fmt.Sprintf("local cluster %s was created without Envoy Gateway: delete it and the run recreates it with it (or cluster create --envoy-gateway)", spec.Name)}
	got.Secondary = runner.SecondaryOffer{Why: fmt.Sprintf("local cluster %s was created without Multus: delete it and the run recreates it with it (multus: true in the suite's local block, or cluster create --multus)", spec.Name)}
	if spec.Multus {
		got.Secondary.Network = lab.SecondaryNetwork
	}
	if e, ok := spec.External(); ok {
		got.External = &runner.External{Control: e.Control, Direct: e.Direct, ViaGateway: e.ViaGateway,
			Direct6: e.Direct6, ViaGateway6: e.ViaGateway6, GatewayNode: e.GatewayNode,
			TokenFile: p.Layout.ExternalTokenFile(spec.Name), CAFile: p.Layout.CAFile(spec.Name)}
	}
	return got, err
}

// facts are the fingerprint facts a cluster's state knows better than the cluster can tell.
func facts(spec cluster.Spec) map[string]string {
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
	if spec.Multus {
		facts["multus"] = binaries.MultusVersion + " (thin plugin), delegating to " + spec.Datapath
	}
	if _, own := facts["egress_gateway_impl"]; !own && spec.HasExternal {
		facts["egress_gateway_impl"] = "plain: a route to the gateway node, nftables SNAT there"
	}
	return facts
}

// ReleasesObjects reports whether Release deletes the cluster, and the run's objects with it:
// it does for a cluster the run created and does not keep.
func (p *Provider) ReleasesObjects() bool { return p.created && !p.run.Keep }

// Release deletes a cluster the run created, unless the run keeps it.
func (p *Provider) Release(ctx context.Context) error {
	if !p.ReleasesObjects() {
		return nil
	}
	p.run.Progress("deleting local cluster %s (--keep keeps it)", p.spec.Name)
	return cluster.Delete(ctx, cluster.DeleteOptions{Name: p.spec.Name, Layout: p.Layout})
}

// Lost names the local cluster's daemons whose processes are gone: known at once, where the
// API would notice a dead kubelet only after the node-monitor grace period.
func (p *Provider) Lost(context.Context, *kube.Client, []string) runner.Loss {
	spec, err := p.Layout.ReadSpec(p.spec.Name)
	if err != nil {
		return runner.Loss{}
	}
	dead := cluster.NotRunning(p.Layout, spec)
	if len(dead) == 0 {
		return runner.Loss{}
	}
	return runner.Loss{Down: []string{strings.Join(dead, ", ") + " not running"}, ControlPlane: slices.ContainsFunc(dead, cluster.ControlPlane)}
}
