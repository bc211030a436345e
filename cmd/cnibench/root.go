package main

import (
	"github.com/spf13/cobra"
)

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "cnibench",
		Short:         "Benchmark Kubernetes pod networking and container runtimes, with confidence intervals",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newRunCommand(), newResultsCommand(), newReportCommand(), newCompareCommand(), newClusterCommand(), newSetupCommand(), newRBACCommand(), newImageCommand(), newAgentCommand())
	return root
}
