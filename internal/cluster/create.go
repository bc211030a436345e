package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/cnibench/cnibench/internal/cluster/binaries"
	"github.com/cnibench/cnibench/internal/cluster/datapath"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/progress"
	"github.com/cnibench/cnibench/internal/setting"
	"k8s.io/client-go/kubernetes"
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

// creator carries the state of one create.
type creator struct {
	layout Layout
	cache  binaries.Cache
	spec   Spec
	dp     datapath.Datapath
	k8s    binaries.Component
	cg     cgroupTree
	out    io.Writer
	began  time.Time
	log    *progress.Log
	client kubernetes.Interface
	wait   time.Duration
	// archives are the image archives every node imports.
	archives []string
	// gatewayAPI: the cluster gets the Gateway API split (Options.GatewayAPI).
	gatewayAPI bool
	// registry says the cluster gets a lab registry.
	registry bool

	mu      sync.Mutex
	daemons []*running
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
	c := &creator{layout: o.Layout, cache: o.Cache, dp: dp, k8s: k8s, cg: cg, out: o.Out, began: time.Now(), wait: o.Wait, gatewayAPI: o.GatewayAPI, registry: o.Registry}
	c.log = progress.New(o.Out, c.began)
	if c.spec, err = reserve(o, cg.String()); err != nil {
		return err
	}
	c.spec.ImageStore = ImageStoreTmpfs
	if o.RuntimeOnDisk || c.spec.ContainerRuntime() == lab.CRICrio {
		c.spec.ImageStore = ImageStoreDisk
	}
	defer func() {
		if err != nil {
			// An interrupted create (Ctrl-C) has nothing to explain: its logs go with it.
			err = c.abort(err, !errors.Is(ctx.Err(), context.Canceled))
		}
	}()
	if err := c.build(ctx); err != nil {
		return err
	}
	c.spec.Status = StatusReady
	if err := c.layout.writeSpec(c.spec); err != nil {
		return err
	}
	c.progress("cluster %s is ready (%d nodes, datapath %s, kube-proxy %s)", c.spec.Name, c.spec.Nodes, c.spec.Datapath, c.spec.ProxyMode)
	return nil
}

// build runs the steps of a create in order.
func (c *creator) build(ctx context.Context) error {
	steps := []struct {
		what string
		fn   func(context.Context) error
	}{
		{"building images", c.buildImages},
		{"issuing certificates", func(context.Context) error { return writePKI(c.layout, c.spec) }},
		{"creating namespaces and underlay", c.setupNetwork},
		{"sharing the state directory with the node runtimes", c.shareStateDir},
		{"starting etcd and the control plane", c.startControlPlane},
		{"starting nodes", c.startNodes},
		{"waiting for nodes to be Ready", c.waitNodesReady},
		{"installing CoreDNS and a RuntimeClass per runtime handler", c.installAddons},
		{"waiting for CoreDNS", c.waitCoreDNS},
		{"starting the external host and the egress gateway", c.setupExternal},
		{"starting the lab registry", c.setupRegistry},
		{"installing the Gateway API", c.installGatewayAPI},
	}
	for _, st := range steps {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("create %s: %w", c.spec.Name, err)
		}
		c.progress("%s", st.what)
		if err := st.fn(ctx); err != nil {
			return fmt.Errorf("create %s: %s: %w", c.spec.Name, st.what, err)
		}
	}
	return nil
}

// abort removes a failed cluster, keeping its logs for the user if keepLogs, and returns the
// cause.
func (c *creator) abort(cause error, keepLogs bool) error {
	c.progress("create failed; removing what was created")
	kept := ""
	logs := c.layout.LogDir(c.spec.Name)
	if entries, err := os.ReadDir(logs); keepLogs && err == nil && len(entries) > 0 {
		dst := filepath.Join(filepath.Dir(c.layout.Root), "failed", fmt.Sprintf("%s-%s", c.spec.Name, time.Now().Format("20060102-150405")))
		// A copy, not a rename: the state directory is a mount of its own, and rename(2)
		// does not cross mounts.
		if err := copyDir(logs, dst); err == nil {
			kept = dst
		} else {
			c.progress("could not keep the logs: %v", err)
		}
	}
	// A fresh context: the create's own may be the one that was cancelled.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c.killOwn(ctx)
	if err := Delete(ctx, DeleteOptions{Name: c.spec.Name, Layout: c.layout, Out: c.out}); err != nil {
		cause = fmt.Errorf("%w\ncleanup after the failure also failed: %v", cause, err)
	}
	if kept != "" {
		cause = fmt.Errorf("%w\nlogs of the failed cluster: %s", cause, kept)
	}
	return cause
}

// killOwn kills the daemons this create started and waits until they are reaped. Delete finds
// processes through the cluster's cgroup, but a daemon started a moment ago may still be in its
// nsenter/sh prologue, not yet in that cgroup; as the parent, create knows it regardless.
func (c *creator) killOwn(ctx context.Context) {
	c.mu.Lock()
	own := append([]*running(nil), c.daemons...)
	c.mu.Unlock()
	for _, r := range own {
		_ = syscall.Kill(r.pid, syscall.SIGKILL)
	}
	for _, r := range own {
		select {
		case <-r.done:
		case <-ctx.Done():
			return
		}
	}
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
	s := Spec{Name: o.Name, Index: index, Nodes: o.Nodes, Datapath: o.Datapath, ProxyMode: o.ProxyMode,
		KubernetesVersion: o.Kubernetes, Cgroups: cgroups, CRI: o.CRI, Runtimes: o.Runtimes, MTU: o.MTU, IPFamily: o.IPFamily,
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

// progress prints one line with the time since create began.
func (c *creator) progress(format string, args ...any) { c.log.Printf(format, args...) }

// watch registers a started daemon: its death fails the create at once, and an aborted create
// kills it.
func (c *creator) watch(r *running) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.daemons = append(c.daemons, r)
}

// deadDaemon returns the error of the first watched daemon that has exited.
func (c *creator) deadDaemon() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.daemons {
		if err := r.exited(); err != nil {
			return err
		}
	}
	return nil
}

// poll waits for cond, failing early when a daemon dies, the context ends or timeout passes.
func (c *creator) poll(ctx context.Context, what string, timeout time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if err := c.deadDaemon(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s", timeout, what)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// stepTimeout bounds one step's wait: a share of --wait, and never less than the step's own
// floor (what it needs on an ordinary host). A slow host, such as an emulated VM, lengthens
// every wait of the create with the one flag; a short --wait bounds only the wait for nodes.
func (c *creator) stepTimeout(share int, floor time.Duration) time.Duration {
	return max(c.wait/time.Duration(share), floor)
}

// bin is the path of a cached binary.
func (c *creator) bin(name string) string { return c.cache.Path(name) }

// kube is the path of one of the cluster's Kubernetes release's binaries.
func (c *creator) kube(name string) string { return c.cache.BinaryPath(c.k8s, name) }

// anyBin is the path of a cached binary, the cluster's Kubernetes release's included (flannel's
// start script runs kubectl).
func (c *creator) anyBin(name string) string {
	if slices.Contains(c.k8s.Binaries, name) {
		return c.kube(name)
	}
	return c.bin(name)
}

// hostBin is a binary from the host's packages (etcd, runc).
func (c *creator) hostBin(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	return name
}

// cniBinDir holds the CNI plugins.
func (c *creator) cniBinDir() string { return filepath.Dir(c.cache.Path("bridge")) }

// runDir holds pid files.
func (c *creator) runDir() string { return filepath.Join(c.layout.Dir(c.spec.Name), "run") }

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
