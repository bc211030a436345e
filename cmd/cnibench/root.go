package main

import (
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
)

// pluginName is the name kubectl finds the binary by on PATH to run it as `kubectl cnibench`.
const pluginName = "kubectl-cnibench"

// asKubectlPlugin reports whether the binary was started as a kubectl plugin.
func asKubectlPlugin() bool { return filepath.Base(os.Args[0]) == pluginName }

func newRootCommand() *cobra.Command {
	plugin := asKubectlPlugin()
	root := &cobra.Command{
		Use:           "cnibench",
		Short:         "Benchmark Kubernetes pod networking and container runtimes, with confidence intervals",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	if plugin {
		// Usage and help then read "kubectl cnibench run ...", as the user typed it.
		root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl cnibench"}
	}
	root.AddCommand(newRunCommand(plugin), newResultsCommand(), newReportCommand(), newCompareCommand(), newHistoryCommand(), newServeCommand(), newClusterCommand(), newSetupCommand(), newRBACCommand(), newImageCommand(), newAgentCommand())
	return root
}
