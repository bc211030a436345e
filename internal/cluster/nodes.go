package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/cnibench/cnibench/internal/cluster/datapath"
	"github.com/cnibench/cnibench/internal/cluster/images"
	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/lab"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// buildImages builds (or finds cached) the pause, CoreDNS and tools images; the tools image
// carries the table's tools (binaries.ImageTools), the split's where the cluster has it and
// Envoy Gateway's where it runs it.
func buildImages(gw gatewaySet) func(context.Context, *actionContext) error {
	return func(ctx context.Context, ac *actionContext) error {
		self, err := os.Executable()
		if err != nil {
			return fmt.Errorf("locate the cnibench binary for the tools image: %w", err)
		}
		b := images.Builder{CacheDir: ac.bins.cache.Dir, Progress: ac.out}
		pause, err := b.FromBinary(ctx, "pause", ac.bins.bin("cnb-pause"), nil)
		if err != nil {
			return err
		}
		coredns, err := b.FromBinary(ctx, "coredns", ac.bins.bin("coredns"), []string{"-conf", "/etc/coredns/Corefile"})
		if err != nil {
			return err
		}
		tools, err := b.Tools(ctx, self, imageTools(ac.bins, gw)...)
		if err != nil {
			return err
		}
		ac.spec.Images = Images{Pause: pause.Ref, CoreDNS: coredns.Ref, Tools: tools.Ref}
		ac.archives = []string{pause.Archive, coredns.Archive, tools.Archive}
		return ac.save()
	}
}

// startNodes brings up every node in parallel: runtime, images, pod network, kubelet, proxy.
func startNodes(ctx context.Context, ac *actionContext) error {
	s := ac.spec
	if err := writeResolvConf(ac.layout.resolvConf(s.Name)); err != nil {
		return err
	}
	dpc := dpCluster(s, ac.layout, ac.bins)
	if err := ac.dp.Setup(ctx, dpc); err != nil {
		return fmt.Errorf("datapath %s: %w", ac.dp.Name(), err)
	}
	if s.Multus {
		if err := datapath.SetupMultus(dpc); err != nil {
			return err
		}
	}
	env := nodeEnv{spec: s, layout: ac.layout, bins: ac.bins, procs: ac.procs, waits: ac.waits}
	rt := newNodeRuntime(env, ac.archives)
	err := parallel(s.Nodes, func(i int) error {
		n := nodeOf(s, ac.layout, i)
		if err := rt.start(ctx, n); err != nil {
			return err
		}
		if err := env.startKubelet(n, rt.socket(n)); err != nil {
			return err
		}
		if s.ProxyMode == lab.ProxyNone {
			return nil
		}
		return env.startKubeProxy(n)
	})
	if err != nil {
		return err
	}
	return startDatapathDaemons(ctx, ac, dpc)
}

// dpCluster describes the cluster to its datapath.
func dpCluster(s Spec, l Layout, bins binPaths) datapath.Cluster {
	p := s.Plan()
	dpc := datapath.Cluster{Name: s.Name, ClusterCIDR: p.ClusterCIDR(), ServiceCIDR: p.ServiceCIDR(),
		Kubeconfig: l.Kubeconfig(s.Name), APIServer: "https://" + p.ControlPlaneIP().String() + ":6443",
		Bin: bins.any, StateDir: l.Dir(s.Name), MTU: s.UnderlayMTU(), Family: s.Family(), Secondary: p.Secondary()}
	if p.HasIPv6() {
		dpc.ClusterCIDR6 = p.ClusterCIDR6()
	}
	for i := 1; i <= s.Nodes; i++ {
		dpc.Nodes = append(dpc.Nodes, dpNode(s, nodeOf(s, l, i)))
	}
	return dpc
}

// startDatapathDaemons starts a datapath's daemons and waits until each is ready.
func startDatapathDaemons(ctx context.Context, ac *actionContext, dpc datapath.Cluster) error {
	wd, ok := ac.dp.(datapath.WithDaemons)
	if !ok {
		return nil
	}
	daemons, err := wd.Daemons(dpc)
	if err != nil {
		return fmt.Errorf("datapath %s: %w", ac.dp.Name(), err)
	}
	s := ac.spec
	for _, d := range daemons {
		netns, cg := s.CtlNetns(), s.CgroupRoot()+"/ctl"
		if d.Node > 0 {
			n := nodeOf(s, ac.layout, d.Node)
			netns, cg = n.netns, n.cgroup
		}
		if _, err := ac.procs.start(daemon{name: d.Name, netns: netns, cgroup: cg, argv: d.Argv, env: d.Env}); err != nil {
			return err
		}
	}
	for _, d := range daemons {
		if d.Ready == nil {
			continue
		}
		if err := ac.procs.poll(ctx, d.Name+" to be ready", ac.waits.total, func() (bool, error) { return d.Ready(), nil }); err != nil {
			return fmt.Errorf("%w; last lines of its log:\n%s", err, tail(ac.procs.logFile(d.Name), 15))
		}
	}
	return nil
}

// adminClient is the cluster's admin client, whose requests time out after timeout.
func adminClient(l Layout, name string, timeout time.Duration) (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", l.Kubeconfig(name))
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	cfg.Timeout = timeout
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", name, err)
	}
	return cs, nil
}

// waitAPIServer makes the admin client the rest of create uses and waits until /readyz
// answers ok.
func waitAPIServer(ctx context.Context, ac *actionContext) error {
	// 10 s at the default --wait; a slow host's API server gets longer.
	client, err := adminClient(ac.layout, ac.spec.Name, ac.waits.step(18, 10*time.Second))
	if err != nil {
		return err
	}
	ac.client = client
	return ac.procs.poll(ctx, "the API server's /readyz", ac.waits.step(3, time.Minute), func() (bool, error) {
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(body) == "ok", nil
	})
}

// waitNodesReady writes pod CIDRs when the datapath does not have them allocated, and waits
// until every node reports Ready.
func waitNodesReady(ctx context.Context, ac *actionContext) error {
	s, allocated := ac.spec, ac.dp.AllocateNodeCIDRs()
	patched := map[string]bool{}
	// A patch that fails is retried until the wait ends: a busy API server times requests out.
	var patchErr error
	err := ac.procs.poll(ctx, "all nodes Ready", ac.waits.total, func() (bool, error) {
		nodes, err := ac.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		ready := 0
		for _, n := range nodes.Items {
			switch {
			case patched[n.Name]:
			case !allocated && n.Spec.PodCIDR == "":
				if patchErr = patchPodCIDR(ctx, ac.client, s, n.Name); patchErr != nil {
					return false, nil
				}
				patched[n.Name] = true
			case allocated && n.Spec.PodCIDR != "":
				cidrs := n.Spec.PodCIDRs
				if len(cidrs) == 0 {
					cidrs = []string{n.Spec.PodCIDR}
				}
				if err := routePodCIDR(ctx, s, n.Name, cidrs); err != nil {
					return false, err
				}
				patched[n.Name] = true
			}
			if kube.NodeReady(n) {
				ready++
			}
		}
		return ready == s.Nodes, nil
	})
	if err != nil {
		if patchErr != nil {
			err = fmt.Errorf("%w (last error: %w)", err, patchErr)
		}
		return fmt.Errorf("%w; last lines of %s:\n%s", err, s.NodeName(1)+"-kubelet.log", tail(ac.procs.logFile(s.NodeName(1)+"-kubelet"), 15))
	}
	return nil
}

// patchPodCIDR gives a node the pod CIDRs of the cluster's plan.
func patchPodCIDR(ctx context.Context, client kubernetes.Interface, s Spec, node string) error {
	for i := 1; i <= s.Nodes; i++ {
		if s.NodeName(i) != node {
			continue
		}
		cidrs := s.Plan().PodCIDRs(i)
		patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"podCIDR": cidrs[0].String(), "podCIDRs": strs(cidrs)}})
		if _, err := client.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("set pod CIDR of %s: %w", node, err)
		}
		return nil
	}
	return fmt.Errorf("node %s registered but is not part of cluster %s", node, s.Name)
}
