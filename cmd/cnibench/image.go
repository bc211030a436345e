package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/cnibench/cnibench/internal/cluster/binaries"
	"github.com/cnibench/cnibench/internal/cluster/images"
	"github.com/cnibench/cnibench/internal/toolsimage"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/spf13/cobra"
)

// imageOptions are the flags of `cnibench image`.
type imageOptions struct {
	cacheDir string
	push     toolsimage.PushOptions
	layout   string // --oci-layout
	// platforms is --platforms; empty: this machine's alone, as one image rather than an index.
	platforms string
	source    string // --source
}

func newImageCommand() *cobra.Command {
	var o imageOptions
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Build the tools image a remote cluster's pods run, and push it to a registry (no Docker needed)",
	}
	push := &cobra.Command{
		Use:   "push REGISTRY/REPOSITORY[:TAG]",
		Short: "Build the tools image (as the local cluster's, with k6) and push it, printing its name by digest for run --image",
		Long: `Builds the tools image the local cluster runs (a Debian root filesystem with iperf3, sockperf,
stress-ng and sysbench, this cnibench binary, and k6 for the gateway split), the same content by
the same code, and pushes it with the registry credentials docker and kubectl users already have
(the docker config: $DOCKER_CONFIG or ~/.docker/config.json; docker login writes it). It prints the
image's name by digest, which run --image takes. The image is built for this machine's
architecture only, unless --platforms names more (linux/amd64,linux/arm64): then an index of
them is pushed, the arm64 image assembled without emulation from cross-compiled binaries
(cnibench from --source) and Debian's arm64 packages, without STREAM.`,
		Example: `  cnibench image push registry.example.com/bench/cnibench-tools:v1
  cnibench run --kubeconfig K --image registry.example.com/bench/cnibench-tools@sha256:...`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.push.Ref = args[0]
			return o.runPush(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	pf := push.Flags()
	pf.StringVar(&o.push.CAFile, "ca-file", "", "PEM certificates to trust besides the system's (a registry with a private CA)")
	pf.BoolVar(&o.push.Insecure, "insecure", false, "allow a registry without TLS (plain HTTP)")
	build := &cobra.Command{
		Use:   "build --oci-layout DIR",
		Short: "Build the tools image into an OCI image layout, for a registry this machine cannot reach",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.runBuild(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	build.Flags().StringVar(&o.layout, "oci-layout", "", "directory of the OCI image layout (created, or added to) (required)")
	_ = build.MarkFlagRequired("oci-layout")
	for _, c := range []*cobra.Command{push, build} {
		c.Flags().StringVar(&o.cacheDir, "cache-dir", binaries.DefaultDir(), "where built binaries and images are cached (env CNIBENCH_CACHE)")
		c.Flags().StringVar(&o.platforms, "platforms", "", "build an index of the image for these platforms, e.g. linux/amd64,linux/arm64 (default: "+toolsimage.Platform()+" only, as one image)")
		c.Flags().StringVar(&o.source, "source", ".", "cnibench's source directory, cross-compiled for a platform other than this machine's")
	}
	cmd.AddCommand(push, build)
	return cmd
}

// build builds the tools image as both subcommands ship it.
func (o imageOptions) build(ctx context.Context, progress io.Writer) (v1.Image, images.Image, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, images.Image{}, fmt.Errorf("locate the cnibench binary for the tools image: %w", err)
	}
	return toolsimage.Build(ctx, toolsimage.Options{Cache: binaries.Cache{Dir: o.cacheDir}, Self: self, Progress: progress})
}

// buildIndex builds the index of --platforms.
func (o imageOptions) buildIndex(ctx context.Context, progress io.Writer) (v1.ImageIndex, string, error) {
	archs, err := toolsimage.ParsePlatforms(o.platforms)
	if err != nil {
		return nil, "", err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, "", fmt.Errorf("locate the cnibench binary for the tools image: %w", err)
	}
	idx, built, err := toolsimage.BuildIndex(ctx, toolsimage.Options{
		Cache: binaries.Cache{Dir: o.cacheDir}, Self: self, Progress: progress, Source: o.source,
	}, archs)
	if err != nil {
		return nil, "", err
	}
	var names []string
	for _, b := range built {
		n := "linux/" + b.Arch
		if len(b.Left) > 0 {
			n += fmt.Sprintf(" (without %v)", b.Left)
		}
		names = append(names, n)
	}
	return idx, fmt.Sprint(names), nil
}

func (o imageOptions) runPush(ctx context.Context, out, progress io.Writer) error {
	if o.platforms != "" {
		idx, platforms, err := o.buildIndex(ctx, progress)
		if err != nil {
			return err
		}
		fmt.Fprintf(progress, "pushing the index of %s to %s\n", platforms, o.push.Ref)
		o.push.Progress = progress
		ref, err := toolsimage.PushIndex(ctx, idx, o.push)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(out, ref)
		return err
	}
	img, built, err := o.build(ctx, progress)
	if err != nil {
		return err
	}
	fmt.Fprintf(progress, "pushing %s (%s only) to %s\n", built.Ref, toolsimage.Platform(), o.push.Ref)
	o.push.Progress = progress
	ref, err := toolsimage.Push(ctx, img, o.push)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(out, ref)
	return err
}

func (o imageOptions) runBuild(ctx context.Context, out, progress io.Writer) error {
	if o.platforms != "" {
		idx, platforms, err := o.buildIndex(ctx, progress)
		if err != nil {
			return err
		}
		digest, err := toolsimage.WriteLayoutIndex(idx, o.layout)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "index %s of %s in OCI layout %s\n", digest, platforms, o.layout)
		return err
	}
	img, built, err := o.build(ctx, progress)
	if err != nil {
		return err
	}
	digest, err := toolsimage.WriteLayout(img, o.layout)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "%s (%s, %s only) in OCI layout %s\n", built.Ref, digest, toolsimage.Platform(), o.layout)
	return err
}
