package main

import (
	"flag"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
)

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "loom",
		Short: "A Kubernetes operator driven by templates",
		Long: `Loom turns custom resources into child objects rendered from a folder of
YAML templates (Go text/template + sprig), applies them with server-side
apply, prunes what no longer renders, and reports readiness in the parent's
status.

A template set is a folder with a loom.yaml naming the parent kind, *.yaml
templates that render children, _*.tpl partials with define blocks, and a
tests/ folder of golden-file cases.

Exit status: 0 when a command succeeded; 1 when it failed or was used
wrongly (an unknown command or flag, a missing argument, an unknown -o
value). 'loom diff' and 'loom crd' exit 2 instead of 1 when they fail,
because their 1 is an answer ("something would change", "--check found
changes that break"); 'loom rollout status' exits 2 and 3 for a rollout
that failed or is not done yet. Each command's help says which it uses.`,
		Example: `  # Print what a MyResource renders, without a cluster:
  loom render -t templates/myresource -f examples/myresource.yaml

  # Check every template set's golden files:
  loom test templates/

  # See what a template edit would change in the cluster, before Loom applies it:
  loom diff -t templates/myresource

  # Run the operator against the current kubeconfig:
  loom run --templates templates/`,
		SilenceUsage: true,
	}
	root.SetFlagErrorFunc(usageHint)
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	root.PersistentFlags().AddGoFlag(klogFlags.Lookup("v"))
	root.AddCommand(newRenderCommand(), newTestCommand(), newDiffCommand(), newRunCommand(), newRolloutCommand(), newCRDCommand(), newInitCommand(),
		newRBACCommand(), newClusterCommand(), newVersionCommand())
	root.AddCommand(newSuspendCommands()...)
	root.AddCommand(newCompletionCommand())
	return root
}
