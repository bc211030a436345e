package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cnibench/cnibench/internal/bench"
	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/internal/cluster/binaries"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/label"
	"github.com/cnibench/cnibench/internal/provider/local"
	"github.com/cnibench/cnibench/internal/suite"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// version is stamped by the build (-ldflags -X main.version=...).
var version = "dev"

// runOptions are the flags of `cnibench run`: bench's options, and the flags read into them.
type runOptions struct {
	bench.Options
	// The flags read into the options by parse: lists, percentages, node names.
	paths, nodes, datapaths, policies, pairs, precision, warmup, margin string

	labels []string  // --label, read into the run's labels
	gate   gateFlags // the gate applied against --baseline
}

func newRunCommand(plugin bool) *cobra.Command {
	// As a kubectl plugin the default target is kubectl's current context.
	r := &runOptions{Options: bench.Options{CurrentContext: plugin}}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Measure pod networking: targets x paths x workloads, interleaved, with confidence intervals",
		Long: `Runs a suite (the default one without -f) and ends with a verdict: each workload's headline
metric per target (or per path against the host-network baseline), best first, with 95 %
confidence intervals and significance. -v adds the full table; results show prints it later.
Without --kubeconfig/--context it measures the embedded local cluster, creating it if absent
(and deleting it at the end unless --keep). Progress goes to stderr, the summary to stdout.`,
		Args: cobra.NoArgs,
		// The settings whose flags are not their names in kebab case.
		Annotations: settingFlags(map[string]string{"externalCAFile": "external-ca-file"}),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := r.parse(); err != nil {
				return err
			}
			o := r.Options
			o.Stdout, o.Runner.Out = cmd.OutOrStdout(), cmd.ErrOrStderr()
			o.Runner.Version = version
			o.Runner.Local = local.Clusters{Layout: cluster.DefaultLayout(), Cache: binaries.Default()}.Provider
			return bench.Run(cmd.Context(), o)
		},
	}
	r.bindTargets(cmd.Flags())
	r.bindRounds(cmd.Flags())
	r.bindOutput(cmd)
	return cmd
}

// parse reads the flags that need reading into the options.
func (r *runOptions) parse() error {
	o := &r.Options
	if err := checkOutput(o.Output, "table", "json", "yaml"); err != nil {
		return err
	}
	if r.paths != "" {
		o.Overrides.Paths = strings.Split(r.paths, ",")
	}
	if r.pairs != "" {
		var err error
		if o.Overrides.Pairs, err = suite.ParsePairs(r.pairs); err != nil {
			return err
		}
	}
	if err := errors.Join(o.Overrides.SetWarmup(r.warmup), o.Overrides.SetPrecision(r.precision), o.Overrides.SetMargin(r.margin)); err != nil {
		return err
	}
	if r.datapaths != "" {
		o.Overrides.Datapaths = strings.Split(r.datapaths, ",")
	}
	if r.policies != "" {
		var err error
		if o.Overrides.NetworkPolicies, err = suite.ParseNetworkPolicies(r.policies); err != nil {
			return err
		}
	}
	if r.nodes != "" {
		o.Runner.Placement.Nodes = strings.Split(r.nodes, ",")
	}
	if err := runGate(o, &r.gate); err != nil {
		return err
	}
	var err error
	if o.Runner.Labels, err = label.Parse(r.labels); err != nil {
		return fmt.Errorf("--label %w", err)
	}
	return nil
}

// bindTargets binds the flags that say what is measured: the clusters, their variants and
// the pods' placement.
func (r *runOptions) bindTargets(f *pflag.FlagSet) {
	o := &r.Options
	f.StringVarP(&o.SuiteFile, "file", "f", "", "suite file (YAML); default: the built-in suite")
	f.StringVar(&o.Overrides.Kubeconfig, "kubeconfig", "", "measure the cluster of this kubeconfig instead of the local cluster")
	f.StringVar(&o.Overrides.Context, "context", "", "kubeconfig context to use")
	f.StringVar(&o.Overrides.External, "external", "", "HOST:PORT of a `cnibench agent serve` outside the remote cluster, for the egress paths")
	f.StringVar(&o.Overrides.ExternalTokenFile, "external-token-file", "", "the file holding the token of the --external agent (its serve --token-file)")
	f.StringVar(&o.Overrides.ExternalCAFile, "external-ca-file", "", "the CA certificate (PEM) that signed the --external agent's TLS certificate (its serve --tls-cert); set, the agent is reached over HTTPS")
	f.StringVar(&o.Overrides.ExternalGateway, "external-gateway-address", "", "an address of the --external host that the cluster routes through its egress gateway (egress-gateway path)")
	f.StringVar(&o.Overrides.SecondaryNetwork, "secondary-network", "", "the NetworkAttachmentDefinition of the remote cluster that the secondary paths take, NAMESPACE/NAME or NAME in --namespace (Multus; docs/measuring.md)")
	f.StringVarP(&o.Runner.Namespace, "namespace", "n", "", "namespace to run in (default: a fresh cnibench-<run>, removed at the end)")
	f.StringVar(&o.Runner.Image, "image", "", "tools image (default: the local cluster's own; required for remote clusters)")
	f.StringVar(&o.Runner.ImagePullSecret, "image-pull-secret", "", "a Secret in --namespace holding the credentials of --image's registry (kubectl create secret docker-registry), named by every pod of the run")
	f.StringVar(&o.Runner.RuntimeClass, "runtime-class", "", "RuntimeClass of every benchmark pod (e.g. crun); --runtimes compares several")
	f.StringSliceVar(&o.Overrides.CRIs, "cri", nil, "local clusters' CRI: containerd, crio; several compare them side by side, a cluster each")
	f.StringSliceVar(&o.Overrides.Runtimes, "runtimes", nil, "compare runtimes side by side in each cluster, samples interleaved: RuntimeClass names (local clusters: runc, crun, runsc, youki)")
	f.StringSliceVar(&o.Overrides.Families, "families", nil, "compare IP families side by side in each cluster, samples interleaved: ipv4, ipv6 (a local cluster is then built dual-stack or IPv6-only; docs/measuring.md)")
	f.StringSliceVar(&o.Overrides.Tunings, "tunings", nil, "compare kernel tuning profiles side by side in each local cluster, samples interleaved: default, throughput, latency, no-offloads, veth-gro or YAML files (docs/measuring.md)")
	f.StringVar(&o.Runner.Placement.Selector, "node-selector", "", "label selector for the two nodes")
	f.StringVar(&r.nodes, "nodes", "", "node names: client node,server node[,more nodes to spread pairs over]")
	f.BoolVar(&o.Runner.Placement.TolerateTaints, "tolerate-taints", false, "place pods on tainted nodes too")
	f.StringVar(&o.Overrides.Datapath, "datapath", "", "local cluster datapath (default bridge)")
	f.StringVar(&r.datapaths, "datapaths", "", "compare datapaths side by side: one local cluster each, samples interleaved (e.g. bridge,flannel-vxlan,cilium-vxlan)")
	f.StringVar(&r.policies, "network-policies", "", "measure each target under these NetworkPolicy variants, a local cluster each: none, allow (a policy admitting the client to the servers), with +N unrelated policies (e.g. none,allow,allow+100,allow+1000)")
	f.StringVar(&o.Overrides.ProxyMode, "proxy-mode", "", "local cluster kube-proxy mode (default nftables; none for a datapath that replaces kube-proxy)")
	f.StringVar(&o.Overrides.Kubernetes, "kubernetes-version", "", "local cluster Kubernetes release: "+strings.Join(lab.KubernetesVersions(), ", ")+" (default the first)")
	f.StringVar(&o.Overrides.LocalCluster, "cluster", "", "local cluster name (default \"default\")")
	f.BoolVar(&o.Runner.Keep, "keep", false, "keep a local cluster the run created")
	f.BoolVar(&o.Runner.NoNodeProbe, "no-node-probe", false, "do not read the nodes' own network settings (sysctls, MTUs, offloads) into the fingerprint; the read runs a short-lived host-network pod on each node")
}

// bindRounds binds the flags that say how it is measured: paths, concurrency, rounds and
// their samples.
func (r *runOptions) bindRounds(f *pflag.FlagSet) {
	o := &r.Options
	f.StringVar(&r.paths, "paths", "", "comma-separated paths: "+strings.Join(suite.AllPaths(), ", "))
	f.StringVar(&r.pairs, "pairs", "", "concurrency levels: client/server pairs running each workload at once, e.g. 1,10,40 (default 1)")
	f.IntVar(&o.Overrides.Repetitions, "repetitions", 0, "measured rounds (default from the suite: 5)")
	f.DurationVar(&o.Overrides.Duration, "duration", 0, "duration of each sample (default 4s)")
	f.StringVar(&r.warmup, "warmup", "", "duration of each warm-up sample, or off: no warm-up round (default 2s)")
	f.Int64Var(&o.Overrides.Seed, "seed", 0, "shuffle seed (default: random, stored with the run)")
	f.StringVar(&r.precision, "precision", "", "keep adding interleaved rounds after --repetitions while a workload's headline figure has a 95 % CI wider than this, e.g. 5% (up to --budget); off: exactly --repetitions rounds (default suite: 5%)")
	f.StringVar(&r.margin, "margin", "", "with --precision: a comparison also needs rounds until it is different (p < 0.001) or its ratio's 95 % CI lies within this margin, e.g. 2% (default 2%)")
	f.DurationVar(&o.Overrides.Budget, "budget", 0, "with --precision: the run's time budget, setup included (default 10m)")
	f.BoolVar(&o.Overrides.Faithful, "faithful", false, "measure with the sample durations and tools of the study the suite reproduces (its reference.durations: 30 s, 75 s, 120 s...; reference.tools: netperf) instead of the suite's quicker ones and own tools")
	f.BoolVar(&o.Overrides.Profile, "profile", false, "record where the host's CPU time goes during each sample of a local cluster (perf; folded stacks stored with the sample, top functions and flame graphs in the reports)")
	f.StringVar(&o.Overrides.Pods, "pods", "", "how long the pods live: run (each target's pods for its largest pairs level, deployed once) or round (a pairs level's pods only for its samples, every round; pod startup and memory then per round) (default run)")
}

// bindOutput binds the flags of what the run writes and stores, and what it is compared with.
func (r *runOptions) bindOutput(cmd *cobra.Command) {
	o, f := &r.Options, cmd.Flags()
	f.BoolVar(&o.DryRun, "dry-run", false, "print the plan (every sample in order) and its estimated duration")
	f.StringVar(&o.NoiseFrom, "noise-from", "", "with --dry-run: a stored run of this suite (id or prefix) whose noise plans what a gate could catch at --repetitions, and how many rounds would catch --detect")
	storeFlags(cmd, &o.Results, false) // --store, as report, compare and results spell it
	f.StringVarP(&o.Output, "output", "o", "table", "summary format: table (the verdict; with -v every headline metric), json or yaml")
	f.BoolVarP(&o.Verbose, "verbose", "v", false, "end with the full table of headline metrics and the ranking before the verdict")
	f.StringVar(&o.Baseline, "baseline", "", "a stored run (id or prefix) to compare this one with at the end, target by target")
	r.gate.bind(f, "with --baseline (compare --help): ")
	f.StringArrayVar(&r.labels, "label", nil, "key=value stored with the run (repeatable), e.g. --label branch=main --label commit=$SHA; "+
		"results list -l and compare --baseline select runs by them")
}

// runGate reads the gate's flags: the gate applied against --baseline, and the settings a dry
// run with --noise-from plans with.
func runGate(o *bench.Options, g *gateFlags) error {
	gate, err := g.gate()
	if err != nil {
		return err
	}
	if gate != nil && o.Baseline == "" {
		return fmt.Errorf("--fail-on worse: needs --baseline RUN to compare with")
	}
	o.Gate = gate
	if o.NoiseFrom != "" && !o.DryRun {
		return fmt.Errorf("--noise-from: only with --dry-run, which plans the run it would make")
	}
	o.PlanGate, err = g.settings()
	return err
}
