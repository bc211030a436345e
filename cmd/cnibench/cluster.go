package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/internal/cluster/binaries"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/spf13/cobra"
)

func newClusterCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Create, delete and list embedded local clusters (nodes are network namespaces)",
	}
	cmd.AddCommand(newClusterCreateCommand(), newClusterDeleteCommand(), newClusterListCommand(), newClusterKubeconfigCommand())
	return cmd
}

func newClusterCreateCommand() *cobra.Command {
	o := cluster.Options{}
	cmd := &cobra.Command{
		Use:         "create",
		Short:       "Create a local cluster: real kube-apiserver, kubelets, kube-proxy, containerd, CoreDNS",
		Args:        cobra.NoArgs,
		Annotations: settingFlags(map[string]string{"cluster": "name", "kubernetes": "kubernetes-version"}),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Out = cmd.OutOrStdout()
			o.Layout = cluster.DefaultLayout()
			o.Cache = binaries.Default()
			if err := cluster.Create(cmd.Context(), o); err != nil {
				return err
			}
			fmt.Fprintf(o.Out, "\nKubeconfig: %s\nTry: %s --kubeconfig %s get nodes -o wide\n",
				o.Layout.Kubeconfig(o.Name), o.Cache.KubectlPath(o.Kubernetes), o.Layout.Kubeconfig(o.Name))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Name, "name", lab.DefaultClusterName, "cluster name (1-11 characters: a-z, 0-9, '-')")
	f.IntVar(&o.Nodes, "nodes", lab.DefaultNodes, fmt.Sprintf("number of nodes (1-%d)", lab.MaxNodes))
	f.StringVar(&o.Datapath, "datapath", lab.DefaultDatapath, "pod network: "+strings.Join(lab.DatapathNames(), ", "))
	f.StringVar(&o.ProxyMode, "proxy-mode", "", "kube-proxy mode: "+strings.Join(lab.ProxyModes(), ", ")+" (default nftables; none, the default, for a datapath that replaces kube-proxy)")
	f.StringVar(&o.Kubernetes, "kubernetes-version", lab.DefaultKubernetesVersion, "Kubernetes release: "+strings.Join(lab.KubernetesVersions(), ", ")+" (built on first use)")
	f.StringVar(&o.CRI, "cri", lab.CRIContainerd, "the nodes' container runtime interface: "+strings.Join(lab.CRIs(), ", ")+" (crio is built on first use)")
	f.StringSliceVar(&o.Runtimes, "runtimes", nil, "OCI runtime handlers, each with a RuntimeClass of its name: "+strings.Join(lab.RuntimeHandlers(), ", ")+" (default runc,crun; runc always; runsc is gVisor, built on first use; CRI-O offers runc only)")
	f.BoolVar(&o.GatewayAPI, "gateway-api", false, "give the cluster the Gateway API split (its CRDs; Traefik and k6 in the tools image, built on first use)")
	f.BoolVar(&o.EnvoyGateway, "envoy-gateway", false, "also run Envoy Gateway "+binaries.EnvoyGatewayVersion+" (its controller from its own chart; Envoy "+binaries.EnvoyVersion+" and the controller in the tools image, built on first use), so that a suite's targets can choose gateway: envoy; implies --gateway-api")
	f.IntVar(&o.MTU, "mtu", lab.DefaultMTU, "the underlay's MTU, 1280-9000, every link between the nodes (9000: jumbo frames); each datapath sizes its pods' interfaces from it")
	f.StringVar(&o.IPFamily, "ip-family", lab.IPv4, "the cluster's addressing: ipv4, ipv6 (nodes, pods and Services IPv6 only; not on "+strings.Join(lab.DatapathsWhere(func(d lab.Datapath) bool { return d.NeedsIPv4 != "" || d.IPv4Only != "" }), ", ")+") or dual (both, IPv4 first; not on "+strings.Join(lab.DatapathsWhere(func(d lab.Datapath) bool { return d.IPv4Only != "" }), ", ")+")")
	f.BoolVar(&o.Registry, "registry", false, "give the cluster a registry on its external host (TLS from the cluster's CA, one user; its credentials in the cluster's registry-auth/config.json), which its nodes trust and pull from")
	f.BoolVar(&o.Multus, "multus", false, "make Multus the cluster's CNI, delegating every pod to the datapath ("+strings.Join(lab.DatapathsWhere(func(d lab.Datapath) bool { return d.UnderMultus }), ", ")+"), with the NetworkAttachmentDefinition CRD and a macvlan secondary network "+lab.SecondaryNetwork+" (Multus built on first use)")
	f.BoolVar(&o.RuntimeOnDisk, "runtime-on-disk", false, "keep each node's containerd image store on disk (default: a tmpfs, 340 MB of memory a node with the default images; create and delete are faster)")
	f.StringVar(&o.Subnet, "subnet", "", "pin the cluster's /16 (10.200.0.0/16-10.254.0.0/16); default: the first free one")
	f.DurationVar(&o.Wait, "wait", 3*time.Minute, "how long to wait for nodes Ready and CoreDNS available (the API server, containerd and image imports wait a share of it, at least their defaults: raise it on slow hosts)")
	return cmd
}

type deleteOptions struct {
	name string
	all  bool
}

func newClusterDeleteCommand() *cobra.Command {
	o := deleteOptions{}
	cmd := &cobra.Command{
		Use:         "delete",
		Short:       "Delete a local cluster and every host object it created",
		Args:        cobra.NoArgs,
		Annotations: settingFlags(map[string]string{"cluster": "name"}),
		RunE: func(cmd *cobra.Command, _ []string) error {
			layout := cluster.DefaultLayout()
			if o.all {
				return cluster.DeleteAll(cmd.Context(), layout, cmd.OutOrStdout())
			}
			return cluster.Delete(cmd.Context(), cluster.DeleteOptions{Name: o.name, Layout: layout, Out: cmd.OutOrStdout()})
		},
	}
	cmd.Flags().StringVar(&o.name, "name", "default", "cluster to delete")
	cmd.Flags().BoolVar(&o.all, "all", false, "delete every local cluster")
	return cmd
}

type listOptions struct {
	output string
}

func newClusterListCommand() *cobra.Command {
	o := listOptions{}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List local clusters with their health",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(o.output, "table", "json"); err != nil {
				return err
			}
			infos, err := cluster.List(cmd.Context(), cluster.DefaultLayout())
			if err != nil {
				return err
			}
			if o.output == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(infos)
			}
			return printClusters(cmd.OutOrStdout(), infos)
		},
	}
	cmd.Flags().StringVarP(&o.output, "output", "o", "table", "output format: table or json")
	return cmd
}

func printClusters(w io.Writer, infos []cluster.Info) error {
	if len(infos) == 0 {
		_, err := fmt.Fprintln(w, "no local clusters")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tNODES\tDATAPATH\tPROXY\tKUBERNETES\tSUBNET\tAGE\tHEALTH")
	for _, i := range infos {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", i.Name, i.Nodes, i.Datapath, i.ProxyMode, i.Kubernetes, i.Subnet,
			i.Age.Round(time.Second), i.Health)
	}
	return tw.Flush()
}

type kubeconfigOptions struct {
	name string
	path bool
}

func newClusterKubeconfigCommand() *cobra.Command {
	o := kubeconfigOptions{}
	cmd := &cobra.Command{
		Use:   "kubeconfig",
		Short: "Print a local cluster's admin kubeconfig (or its path with --path)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			layout := cluster.DefaultLayout()
			path := layout.Kubeconfig(o.name)
			if _, err := layout.ReadSpec(o.name); err != nil {
				if errors.Is(err, os.ErrNotExist) {
					return fmt.Errorf("--name %s: no such cluster (see: cnibench cluster list)", o.name)
				}
				return err
			}
			if o.path {
				_, err := fmt.Fprintln(cmd.OutOrStdout(), path)
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return fmt.Errorf("read kubeconfig of %s: %w", o.name, err)
			}
			_, err = cmd.OutOrStdout().Write(data)
			return err
		},
	}
	cmd.Flags().StringVar(&o.name, "name", "default", "cluster name")
	cmd.Flags().BoolVar(&o.path, "path", false, "print the file's path instead of its content")
	return cmd
}
