package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cnibench/cnibench/internal/cluster/binaries"
	"github.com/cnibench/cnibench/internal/cluster/datapath"
	"github.com/cnibench/cnibench/internal/cluster/images"
	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/lab"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// buildImages builds (or finds cached) the pause, CoreDNS and tools images.
func (c *creator) buildImages(ctx context.Context) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("locate the cnibench binary for the tools image: %w", err)
	}
	b := images.Builder{CacheDir: c.cache.Dir, Progress: c.out}
	pause, err := b.FromBinary(ctx, "pause", c.bin("cnb-pause"), nil)
	if err != nil {
		return err
	}
	coredns, err := b.FromBinary(ctx, "coredns", c.bin("coredns"), []string{"-conf", "/etc/coredns/Corefile"})
	if err != nil {
		return err
	}
	// STREAM in every cluster's tools image; k6 and Traefik only where the split runs.
	tools, err := b.Tools(ctx, self, append([]string{c.bin(binaries.StreamBinary)}, c.gatewayBinaries()...)...)
	if err != nil {
		return err
	}
	c.spec.Images = Images{Pause: pause.Ref, CoreDNS: coredns.Ref, Tools: tools.Ref}
	c.archives = []string{pause.Archive, coredns.Archive, tools.Archive}
	return c.layout.writeSpec(c.spec)
}

// startNodes brings up every node in parallel: runtime, images, pod network, kubelet, proxy.
func (c *creator) startNodes(ctx context.Context) error {
	if err := c.writeResolvConf(); err != nil {
		return err
	}
	dpc := c.dpCluster()
	if err := c.dp.Setup(ctx, dpc); err != nil {
		return fmt.Errorf("datapath %s: %w", c.dp.Name(), err)
	}
	err := parallel(c.spec.Nodes, func(i int) error {
		if err := c.startRuntime(ctx, i); err != nil {
			return err
		}
		if err := c.startKubelet(ctx, i); err != nil {
			return err
		}
		if c.spec.ProxyMode == lab.ProxyNone {
			return nil
		}
		return c.startKubeProxy(ctx, i)
	})
	if err != nil {
		return err
	}
	return c.startDatapathDaemons(ctx, dpc)
}

// dpCluster describes the cluster to its datapath.
func (c *creator) dpCluster() datapath.Cluster {
	p := c.spec.Plan()
	dpc := datapath.Cluster{Name: c.spec.Name, ClusterCIDR: p.ClusterCIDR(), ServiceCIDR: p.ServiceCIDR(),
		Kubeconfig: c.layout.Kubeconfig(c.spec.Name), APIServer: "https://" + p.ControlPlaneIP().String() + ":6443",
		Bin: c.anyBin, StateDir: c.layout.Dir(c.spec.Name), MTU: c.spec.UnderlayMTU(), Family: c.spec.Family()}
	if p.HasIPv6() {
		dpc.ClusterCIDR6 = p.ClusterCIDR6()
	}
	for i := 1; i <= c.spec.Nodes; i++ {
		dpc.Nodes = append(dpc.Nodes, c.dpNode(i))
	}
	return dpc
}

// startDatapathDaemons starts a datapath's daemons and waits until each is ready.
func (c *creator) startDatapathDaemons(ctx context.Context, dpc datapath.Cluster) error {
	wd, ok := c.dp.(datapath.WithDaemons)
	if !ok {
		return nil
	}
	daemons, err := wd.Daemons(dpc)
	if err != nil {
		return fmt.Errorf("datapath %s: %w", c.dp.Name(), err)
	}
	for _, d := range daemons {
		netns, cg := c.spec.CtlNetns(), c.spec.CgroupRoot()+"/ctl"
		if d.Node > 0 {
			netns, cg = c.spec.NodeNetns(d.Node), c.spec.CgroupRoot()+"/"+c.spec.NodeName(d.Node)+"/system"
		}
		if _, err := c.start(ctx, daemon{name: d.Name, netns: netns, cgroup: cg, argv: d.Argv, env: d.Env}); err != nil {
			return err
		}
	}
	for _, d := range daemons {
		if d.Ready == nil {
			continue
		}
		if err := c.poll(ctx, d.Name+" to be ready", c.wait, func() (bool, error) { return d.Ready(), nil }); err != nil {
			return fmt.Errorf("%w; last lines of its log:\n%s", err, tail(filepath.Join(c.layout.LogDir(c.spec.Name), d.Name+".log"), 15))
		}
	}
	return nil
}

// connect builds the admin client used by the rest of create.
func (c *creator) connect() error {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.layout.Kubeconfig(c.spec.Name))
	if err != nil {
		return fmt.Errorf("load kubeconfig: %w", err)
	}
	// 10 s at the default --wait; a slow host's API server gets longer.
	cfg.Timeout = c.stepTimeout(18, 10*time.Second)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("client for %s: %w", c.spec.Name, err)
	}
	c.client = cs
	return nil
}

// waitAPIServer waits until /readyz answers ok.
func (c *creator) waitAPIServer(ctx context.Context) error {
	if err := c.connect(); err != nil {
		return err
	}
	return c.poll(ctx, "the API server's /readyz", c.stepTimeout(3, time.Minute), func() (bool, error) {
		body, err := c.client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(body) == "ok", nil
	})
}

// waitNodesReady writes pod CIDRs when the datapath does not have them allocated, and waits
// until every node reports Ready.
func (c *creator) waitNodesReady(ctx context.Context) error {
	patched := map[string]bool{}
	// A patch that fails is retried until the wait ends: a busy API server times requests out.
	var patchErr error
	err := c.poll(ctx, "all nodes Ready", c.wait, func() (bool, error) {
		nodes, err := c.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		ready := 0
		for _, n := range nodes.Items {
			switch {
			case patched[n.Name]:
			case !c.dp.AllocateNodeCIDRs() && n.Spec.PodCIDR == "":
				if patchErr = c.patchPodCIDR(ctx, n.Name); patchErr != nil {
					return false, nil
				}
				patched[n.Name] = true
			case c.dp.AllocateNodeCIDRs() && n.Spec.PodCIDR != "":
				cidrs := n.Spec.PodCIDRs
				if len(cidrs) == 0 {
					cidrs = []string{n.Spec.PodCIDR}
				}
				if err := c.routePodCIDR(ctx, n.Name, cidrs); err != nil {
					return false, err
				}
				patched[n.Name] = true
			}
			if kube.NodeReady(n) {
				ready++
			}
		}
		return ready == c.spec.Nodes, nil
	})
	if err != nil {
		if patchErr != nil {
			err = fmt.Errorf("%w (last error: %w)", err, patchErr)
		}
		return fmt.Errorf("%w; last lines of %s:\n%s", err, c.spec.NodeName(1)+"-kubelet.log",
			tail(filepath.Join(c.layout.LogDir(c.spec.Name), c.spec.NodeName(1)+"-kubelet.log"), 15))
	}
	return nil
}

func (c *creator) patchPodCIDR(ctx context.Context, node string) error {
	for i := 1; i <= c.spec.Nodes; i++ {
		if c.spec.NodeName(i) != node {
			continue
		}
		cidrs := c.spec.Plan().PodCIDRs(i)
		patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"podCIDR": cidrs[0].String(), "podCIDRs": strs(cidrs)}})
		if _, err := c.client.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("set pod CIDR of %s: %w", node, err)
		}
		return nil
	}
	return fmt.Errorf("node %s registered but is not part of cluster %s", node, c.spec.Name)
}
