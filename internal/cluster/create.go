package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/cnibench/cnibench/internal/cluster/binaries"
	"github.com/cnibench/cnibench/internal/cluster/datapath"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/progress"
	"github.com/cnibench/cnibench/internal/setting"
)

// Options are the inputs of Create.
type Options struct {
	// LocalConfig is what the cluster is made of; an empty setting takes its default, zero
	// nodes excepted (they are refused).
	lab.LocalConfig
	// Runtimes are the runtime handlers the nodes offer, each with a RuntimeClass of its name
	// (RuntimeHandlers); empty means DefaultRuntimes. runc is always offered.
	Runtimes []string
	// GatewayAPI gives the cluster the Gateway API split: the CRDs installed, Traefik and k6 in
	// the tools image (built on first use). Without it the tools image stays half the size.
	GatewayAPI bool
	// EnvoyGateway also runs Envoy Gateway (its controller from its own chart, Envoy and the
	// controller in the tools image, built on first use), so that a run can measure the split
	// through it beside Traefik. It implies GatewayAPI.
	EnvoyGateway bool
	// RuntimeOnDisk keeps each containerd node's image store on the host's disk instead of a
	// tmpfs (340 MB of memory a node with the default images; see mountRuntimeStorage).
	RuntimeOnDisk bool
	// Subnet optionally pins the cluster's /16 (10.200.0.0/16 .. 10.254.0.0/16); empty picks a free one.
	Subnet string
	// Wait bounds the wait for nodes Ready and CoreDNS available; the earlier steps wait a
	// share of it (the API server and an image import a third, containerd a sixth), and never
	// less than a minute (containerd half a minute).
	Wait time.Duration
	// Out receives progress lines.
	Out io.Writer
	// Layout and Cache default to DefaultLayout() and binaries.DefaultDir().
	Layout Layout
	Cache  binaries.Cache
}

// validate checks the options and fills their defaults; each error is a *setting.Error naming
// the setting and what was expected.
func (o *Options) validate() (datapath.Datapath, error) {
	nodes := o.Nodes
	o.LocalConfig = o.WithDefaults()
	o.Nodes = nodes
	if err := o.LocalConfig.Validate(); err != nil {
		return nil, err
	}
	dp, err := datapath.Lookup(o.Datapath)
	if err != nil {
		return nil, err
	}
	if o.Wait <= 0 {
		return nil, &setting.Error{Name: "wait", Value: o.Wait.String(), Want: "expected a positive duration such as 3m"}
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Layout.Root == "" {
		o.Layout = DefaultLayout()
	}
	if o.Cache.Dir == "" {
		o.Cache = binaries.Cache{Dir: binaries.DefaultDir()}
	}
	o.GatewayAPI = o.GatewayAPI || o.EnvoyGateway
	rts, err := normalizeRuntimes(o.CRI, o.Runtimes)
	if err != nil {
		return nil, err
	}
	o.Runtimes = rts
	return dp, nil
}

// Create builds a cluster and returns when its nodes are Ready and CoreDNS is available. On
// any failure, including cancellation, it removes everything it created before returning.
func Create(ctx context.Context, o Options) (err error) {
	dp, err := o.validate()
	if err != nil {
		return err
	}
	cg, err := checkHost(o)
	if err != nil {
		return err
	}
	if err := ensureDependencies(ctx, o, dp); err != nil {
		return err
	}
	k8s, err := binaries.KubernetesComponent(o.Kubernetes)
	if err != nil {
		return err
	}
	began := time.Now()
	spec, err := reserve(o, cg.String())
	if err != nil {
		return err
	}
	spec.ImageStore = ImageStoreTmpfs
	if o.RuntimeOnDisk || spec.ContainerRuntime() == lab.CRICrio {
		spec.ImageStore = ImageStoreDisk
	}
	ac := &actionContext{spec: spec, layout: o.Layout, bins: binPaths{cache: o.Cache, k8s: k8s}, dp: dp,
		procs: newSupervisor(o.Layout, spec, cg), log: progress.New(o.Out, began), out: o.Out, waits: waits{total: o.Wait}}
	defer func() {
		if err != nil {
			// An interrupted create (Ctrl-C) has nothing to explain: its logs go with it.
			err = abort(ac, err, !errors.Is(ctx.Err(), context.Canceled))
		}
	}()
	if err := runActions(ctx, ac, createActions(o.gateways())); err != nil {
		return err
	}
	ac.spec.Status = StatusReady
	if err := ac.save(); err != nil {
		return err
	}
	s := ac.spec
	ac.log.Printf("cluster %s is ready (%d nodes, datapath %s, kube-proxy %s)", s.Name, s.Nodes, s.Datapath, s.ProxyMode)
	return nil
}

// gateways are the Gateway API implementations the options ask the cluster to carry.
func (o Options) gateways() gatewaySet {
	return gatewaySet{api: o.GatewayAPI || o.EnvoyGateway, envoy: o.EnvoyGateway}
}

// createActions are the steps of a create, in order; gw is what Options ask of the Gateway API.
func createActions(gw gatewaySet) []action {
	return []action{
		{"building images", buildImages(gw), nil},
		{"issuing certificates", func(_ context.Context, ac *actionContext) error { return writePKI(ac.layout, ac.spec) }, nil},
		{"creating namespaces and underlay", setupNetwork, nil},
		{"sharing the state directory with the node runtimes", shareStateDir, nil},
		{"starting etcd and the control plane", startControlPlane, nil},
		{"starting nodes", startNodes, nil},
		{"waiting for nodes to be Ready", waitNodesReady, nil},
		{"installing CoreDNS and a RuntimeClass per runtime handler", installAddons, nil},
		{"waiting for CoreDNS", waitCoreDNS, nil},
		{"installing Multus' NetworkAttachmentDefinition CRD and the secondary network", installMultus, func(s Spec) bool { return s.Multus }},
		{"starting the external host and the egress gateway", setupExternal, nil},
		{"starting the lab registry", setupRegistry, func(s Spec) bool { return s.Registry }},
		{"installing the Gateway API", installGatewayAPI, func(Spec) bool { return gw.api }},
		{"installing Envoy Gateway", installEnvoyGateway, func(Spec) bool { return gw.envoy }},
	}
}

// abort removes a failed cluster, keeping its logs for the user if keepLogs, and returns the
// cause.
func abort(ac *actionContext, cause error, keepLogs bool) error {
	ac.log.Printf("create failed; removing what was created")
	name, layout := ac.spec.Name, ac.layout
	kept := ""
	logs := layout.LogDir(name)
	if entries, err := os.ReadDir(logs); keepLogs && err == nil && len(entries) > 0 {
		dst := filepath.Join(filepath.Dir(layout.Root), "failed", fmt.Sprintf("%s-%s", name, time.Now().Format("20060102-150405")))
		// A copy, not a rename: the state directory is a mount of its own, and rename(2)
		// does not cross mounts.
		if err := copyDir(logs, dst); err == nil {
			kept = dst
		} else {
			ac.log.Printf("could not keep the logs: %v", err)
		}
	}
	// A fresh context: the create's own may be the one that was cancelled.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ac.procs.killAll(ctx)
	if err := Delete(ctx, DeleteOptions{Name: name, Layout: layout, Out: ac.out}); err != nil {
		cause = fmt.Errorf("%w\ncleanup after the failure also failed: %v", cause, err)
	}
	if kept != "" {
		cause = fmt.Errorf("%w\nlogs of the failed cluster: %s", cause, kept)
	}
	return cause
}

// reserve allocates the name and address block under a lock and writes the spec, before any
// host object exists, so that delete can always find what a create made.
func reserve(o Options, cgroups string) (Spec, error) {
	unlock, err := o.Layout.lock()
	if err != nil {
		return Spec{}, err
	}
	defer unlock()

	names, err := o.Layout.Names()
	if err != nil {
		return Spec{}, err
	}
	used := map[int]bool{}
	for _, n := range names {
		if n == o.Name {
			return Spec{}, &setting.Error{Name: "cluster", Value: o.Name, Want: fmt.Sprintf("a cluster of that name exists (delete it with: cnibench cluster delete --name %s)", o.Name)}
		}
		if s, err := o.Layout.ReadSpec(n); err == nil {
			used[s.Index] = true
		}
	}
	if leftovers := namespacesOf(o.Name); len(leftovers) > 0 {
		return Spec{}, &setting.Error{Name: "cluster", Value: o.Name, Want: fmt.Sprintf("namespaces of that name exist (%v); run: cnibench cluster delete --name %s", leftovers, o.Name)}
	}
	routes, err := hostRoutes()
	if err != nil {
		return Spec{}, err
	}
	index, err := chooseIndex(o.Subnet, used, routes, o.IPFamily)
	if err != nil {
		return Spec{}, err
	}
	if err := o.Layout.claimHostDirs(); err != nil {
		return Spec{}, err
	}
	s := Spec{LocalConfig: o.LocalConfig, Index: index, Cgroups: cgroups, Runtimes: o.Runtimes,
		Status: StatusCreating, Created: time.Now().UTC()}
	return s, o.Layout.writeSpec(s)
}

// chooseIndex honours a pinned subnet when given, else picks a free block.
func chooseIndex(subnet string, used map[int]bool, routes []*net.IPNet, family string) (int, error) {
	if subnet == "" {
		return pickIndex(used, routes, family)
	}
	ip, n, err := net.ParseCIDR(subnet)
	ones, _ := func() (int, int) {
		if n == nil {
			return 0, 0
		}
		return n.Mask.Size()
	}()
	v4 := ip.To4()
	if err != nil || v4 == nil || ones != 16 || v4[0] != 10 || int(v4[1]) < firstBlockOctet || int(v4[1]) >= firstBlockOctet+maxClusters {
		return 0, &setting.Error{Name: "subnet", Value: strconv.Quote(subnet), Want: fmt.Sprintf("expected a /16 from 10.%d.0.0/16 to 10.%d.0.0/16", firstBlockOctet, firstBlockOctet+maxClusters-1)}
	}
	index := int(v4[1]) - firstBlockOctet
	if used[index] {
		return 0, &setting.Error{Name: "subnet", Value: subnet, Want: "used by another cnibench cluster"}
	}
	if r := clashes(Plan{Index: index, Family: family}, routes); r != nil {
		return 0, &setting.Error{Name: "subnet", Value: subnet, Want: fmt.Sprintf("collides with the host route %s; choose another block or leave the subnet out", r)}
	}
	return index, nil
}

// parallel runs fn for nodes 1..n concurrently and joins their errors.
func parallel(n int, fn func(i int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 1; i <= n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errs[i-1] = fn(i)
		}(i)
	}
	wg.Wait()
	return errors.Join(errs...)
}

// copyDir copies the regular files of a directory tree.
func copyDir(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}
