package cluster

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/cnibench/cnibench/internal/cluster/binaries"
	"github.com/cnibench/cnibench/internal/cluster/datapath"
	"github.com/cnibench/cnibench/internal/progress"
	"k8s.io/client-go/kubernetes"
)

// action is one step of a create, in the manner of kind's create actions: its progress line
// and what it does with the create's context.
type action struct {
	Name    string
	Execute func(ctx context.Context, ac *actionContext) error
	// Wanted says whether the cluster asks for the step (nil: every cluster does); a step
	// nobody asked for is neither run nor announced.
	Wanted func(Spec) bool
}

// actionContext is what the steps of a create share: the cluster as far as it is built, where
// its files go, the binaries it runs, and the daemons started so far. The later steps read
// what the earlier ones made (the images' archives, the API server's client).
type actionContext struct {
	// spec is the cluster; a step that adds to it (its images, its external host) saves it.
	spec   Spec
	layout Layout
	bins   binPaths
	dp     datapath.Datapath
	procs  *supervisor
	log    *progress.Log
	// out is the create's output, for the lines of the image builds and of a cleanup.
	out   io.Writer
	waits waits
	// archives are the image archives every node imports (buildImages).
	archives []string
	// client is the admin client, once the API server answers (startControlPlane).
	client kubernetes.Interface
}

// save writes the spec as the steps have made it so far.
func (ac *actionContext) save() error { return ac.layout.writeSpec(ac.spec) }

// runActions runs the steps of a create in order, each announced by its progress line.
func runActions(ctx context.Context, ac *actionContext, actions []action) error {
	for _, a := range actions {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("create %s: %w", ac.spec.Name, err)
		}
		if a.Wanted != nil && !a.Wanted(ac.spec) {
			continue
		}
		ac.log.Printf("%s", a.Name)
		if err := a.Execute(ctx, ac); err != nil {
			return fmt.Errorf("create %s: %s: %w", ac.spec.Name, a.Name, err)
		}
	}
	return nil
}

// binPaths locates the binaries a cluster runs: the cache's, and its Kubernetes release's.
type binPaths struct {
	cache binaries.Cache
	k8s   binaries.Component
}

// bin is the path of a cached binary.
func (b binPaths) bin(name string) string { return b.cache.Path(name) }

// kube is the path of one of the cluster's Kubernetes release's binaries.
func (b binPaths) kube(name string) string { return b.cache.BinaryPath(b.k8s, name) }

// any is the path of a cached binary, the cluster's Kubernetes release's included (flannel's
// start script runs kubectl).
func (b binPaths) any(name string) string {
	if slices.Contains(b.k8s.Binaries, name) {
		return b.kube(name)
	}
	return b.bin(name)
}

// cniDir holds the CNI plugins.
func (b binPaths) cniDir() string { return filepath.Dir(b.cache.Path("bridge")) }

// hostBin is a binary from the host's packages (etcd, runc).
func hostBin(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	return name
}

// waits bounds the waits of a create: Options.Wait for nodes Ready and CoreDNS available, a
// share of it for each earlier step.
type waits struct{ total time.Duration }

// step bounds one step's wait: a share of --wait, and never less than the step's own floor
// (what it needs on an ordinary host). A slow host, such as an emulated VM, lengthens every
// wait of the create with the one flag; a short --wait bounds only the wait for nodes.
func (w waits) step(share int, floor time.Duration) time.Duration {
	return max(w.total/time.Duration(share), floor)
}
