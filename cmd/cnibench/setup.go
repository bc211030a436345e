package main

import (
	"github.com/cnibench/cnibench/internal/cluster/binaries"
	"github.com/spf13/cobra"
)

type setupOptions struct {
	cacheDir string
}

func newSetupCommand() *cobra.Command {
	o := setupOptions{}
	cmd := &cobra.Command{
		Use:   "setup",
		Short: "Build and cache the Kubernetes, CoreDNS, containerd and CNI binaries the local cluster runs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return binaries.Cache{Dir: o.cacheDir}.Ensure(cmd.Context(), cmd.OutOrStdout(), binaries.Components()...)
		},
	}
	cmd.Flags().StringVar(&o.cacheDir, "cache-dir", binaries.DefaultDir(), "where built binaries are cached (env CNIBENCH_CACHE)")
	return cmd
}
