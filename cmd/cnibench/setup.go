package main

import (
	"github.com/cnibench/cnibench/internal/cluster/binaries"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/setting"
	"github.com/spf13/cobra"
)

type setupOptions struct {
	cacheDir string
	all      bool
	k8s      string
}

func newSetupCommand() *cobra.Command {
	o := setupOptions{}
	cmd := &cobra.Command{
		Use:   "setup [COMPONENT...]",
		Short: "Build and cache the binaries the local cluster runs (by default only what a bridge cluster needs)",
		Long: `Build and cache the third-party binaries the local cluster runs, from the Go module proxy
(and STREAM from crates.io, with cargo).

By default only what the default run needs: the CNI plugins, CoreDNS, containerd, STREAM and one
Kubernetes release. A cluster that needs more (the flannel or Cilium datapaths, another
Kubernetes release) builds it on first use; --all builds everything now, and naming components
(envoy-gateway envoy) builds just those.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			comps := binaries.Components()
			switch {
			case len(args) > 0 && o.all:
				return &setting.Error{Name: "--all", Want: "expected either --all or component names, not both"}
			case len(args) > 0:
				comps = nil
				for _, name := range args {
					c, err := binaries.Lookup(name)
					if err != nil {
						return err
					}
					comps = append(comps, c)
				}
			case !o.all:
				var err error
				if comps, err = binaries.Base(o.k8s); err != nil {
					return err
				}
			}
			return binaries.Cache{Dir: o.cacheDir}.Ensure(cmd.Context(), cmd.OutOrStdout(), comps...)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.cacheDir, "cache-dir", binaries.DefaultDir(), "where built binaries are cached (env CNIBENCH_CACHE)")
	f.BoolVar(&o.all, "all", false, "build every component: all datapaths and every Kubernetes release")
	f.StringVar(&o.k8s, "kubernetes-version", lab.DefaultKubernetesVersion, "the Kubernetes release to build (without --all)")
	return cmd
}
