package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/loom-operator/loom/engine/cluster"
	"github.com/loom-operator/loom/engine/offline"
	"github.com/loom-operator/loom/internal/clusteradmin"
	"github.com/loom-operator/loom/internal/kubeclient"
)

// clusterRequestTimeout bounds loom cluster's requests to the management
// cluster.
const clusterRequestTimeout = 30 * time.Second

// clusterOptions are the flags every loom cluster command shares: the
// management cluster (--kubeconfig, --context) and Loom's namespace in it.
type clusterOptions struct {
	kube      kubeTarget
	namespace string
}

// secrets is the Secrets client of Loom's namespace in the management
// cluster.
func (o *clusterOptions) secrets() (corev1client.SecretInterface, error) {
	cfg, err := restConfig(o.kube)
	if err != nil {
		return nil, err
	}
	kube, err := kubeclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("create client: %w", err)
	}
	return kube.CoreV1().Secrets(o.namespace), nil
}

// newClusterCommand is loom cluster and its subcommands.
func newClusterCommand() *cobra.Command {
	o := &clusterOptions{}
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Register, list and remove the workload clusters Loom may place children in",
		Long: `Loom runs in one cluster (the management cluster) and places children in the
workload clusters registered there: a Secret in Loom's namespace labelled
loom.dev/cluster=NAME that holds a kubeconfig under the key kubeconfig, or
Cluster API's <cluster>-kubeconfig Secret as Cluster API writes it. These
commands write, list and delete those Secrets in the management cluster of
--kubeconfig (then $KUBECONFIG, then ~/.kube/config), in the namespace
-n (default loom-system, as loom render's --loom-namespace).

Exit status: 0 when the command did what it says; 1 when it failed or was
used wrongly. loom cluster list exits 0 when it listed the registrations,
reachable or not: the REACHABLE column says which are.`,
		Example: `  loom cluster add eu-1 --from-kubeconfig eu-1.kubeconfig --label env=prod --label region=eu
  loom cluster list
  loom cluster remove eu-1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	pf := cmd.PersistentFlags()
	o.kube.register(pf, "the management cluster: ")
	pf.StringVarP(&o.namespace, "namespace", "n", offline.DefaultLoomNamespace, "Loom's namespace in the management cluster, where the registrations are (as loom render's --loom-namespace)")
	cmd.AddCommand(newClusterAddCommand(o), newClusterListCommand(o), newClusterRemoveCommand(o))
	return cmd
}

// clusterAddOptions are loom cluster add's flags.
type clusterAddOptions struct {
	*clusterOptions
	fromPath    string
	fromContext string
	labels      []string
	allowExec   bool
	dryRun      bool
}

func newClusterAddCommand(parent *clusterOptions) *cobra.Command {
	o := &clusterAddOptions{clusterOptions: parent}
	cmd := &cobra.Command{
		Use:   "add NAME --from-kubeconfig FILE",
		Short: "Register a workload cluster: write its kubeconfig into a Secret in Loom's namespace",
		Long: `Add registers the cluster of --from-kubeconfig's context (--from-context,
default its current-context) as NAME: it server-side applies the Secret NAME
in Loom's namespace (-n) of the management cluster (--kubeconfig), labelled
loom.dev/cluster=NAME and each --label, the kubeconfig under the key
kubeconfig.

The kubeconfig written holds only that context, its cluster and its user,
with the certificate and key files they name read into it as data, as
'kubectl config view --minify --flatten' writes it: Loom reads no file of
its own disk for a registered cluster. A kubeconfig that Loom would refuse
is refused here, with Loom's message: one whose user names a token file
(put the token in the kubeconfig), and one whose user runs an exec
credential plugin or an auth-provider, unless --allow-kubeconfig-exec is
given (Loom must then be started with --allow-kubeconfig-exec too).

Running it again with the same arguments changes nothing; with another
kubeconfig or other labels it updates the Secret (labels add set before and
not now are removed). It refuses to write a Secret that is not already
NAME's Loom registration (Loom never takes over a Secret by its name alone),
and a second registration of NAME, which would make the name ambiguous.

--dry-run prints the Secret instead of writing it, and sends no request; its
kubeconfig's credentials are redacted, as 'kubectl config view' shows them,
so that the output can be shared.`,
		Example: `  loom cluster add w1 --from-kubeconfig .cluster-workload/kubeconfig
  loom cluster add eu-1 --from-kubeconfig ~/.kube/config --from-context eu-1-admin --label env=prod
  loom cluster add eu-1 --from-kubeconfig eu-1.kubeconfig --dry-run`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runClusterAdd(cmd.Context(), cmd.OutOrStdout(), o, args[0])
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.fromPath, "from-kubeconfig", "", "the kubeconfig file of the cluster to register")
	f.StringVar(&o.fromContext, "from-context", "", "the context of --from-kubeconfig to register (default: its current-context)")
	f.StringArrayVar(&o.labels, "label", nil, "a label KEY=VALUE of the registration, for loom.yaml's cluster selectors and templates' .Clusters (repeatable)")
	f.BoolVar(&o.allowExec, cluster.FlagAllowExec, false, "register a kubeconfig that runs an exec credential plugin or an auth-provider (Loom needs the same flag to use it)")
	f.BoolVar(&o.dryRun, "dry-run", false, "print the Secret, its credentials redacted, instead of writing it")
	_ = cmd.MarkFlagRequired("from-kubeconfig")
	return cmd
}

func runClusterAdd(ctx context.Context, out io.Writer, o *clusterAddOptions, name string) error {
	labels, err := clusteradmin.ParseLabels(o.labels)
	if err != nil {
		return err
	}
	kc, err := clusteradmin.Kubeconfig(o.fromPath, o.fromContext)
	if err != nil {
		return err
	}
	s, err := clusteradmin.NewRegistration(name, o.namespace, labels, kc, cluster.Options{AllowExec: o.allowExec})
	if err != nil {
		return err
	}
	if o.dryRun {
		return printRedactedSecret(out, s)
	}
	secrets, err := o.secrets()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, clusterRequestTimeout)
	defer cancel()
	result, err := clusteradmin.Apply(ctx, secrets, s)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "cluster %s %s (Secret %s/%s)\n", name, result, s.Namespace, s.Name)
	return err
}

// printRedactedSecret prints s as YAML with its kubeconfig's credentials
// redacted, in stringData so that it reads as text.
func printRedactedSecret(out io.Writer, s *corev1.Secret) error {
	kc, err := clusteradmin.Redact(s.Data[cluster.KeyKubeconfig])
	if err != nil {
		return err
	}
	shown := s.DeepCopy()
	shown.Data = nil
	shown.StringData = map[string]string{cluster.KeyKubeconfig: string(kc)}
	b, err := yaml.Marshal(shown)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "# dry run: the Secret loom cluster add would apply; its kubeconfig's credentials are redacted here.\n%s", b)
	return err
}

// clusterListOptions are loom cluster list's flags.
type clusterListOptions struct {
	*clusterOptions
	timeout   time.Duration
	allowExec bool
	output    string
}

func newClusterListCommand(parent *clusterOptions) *cobra.Command {
	o := &clusterListOptions{clusterOptions: parent}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the registered workload clusters, whether each answers, and its version",
		Long: `List prints one row per registration in Loom's namespace (-n) of the
management cluster (--kubeconfig): Loom's (labelled loom.dev/cluster) and
Cluster API's (<cluster>-kubeconfig). For each it asks the cluster's API
server for its version, with the registration's kubeconfig as Loom would
use it, all clusters at once, each within --timeout: REACHABLE is yes when
it answered, and ERROR says why not otherwise (a refused kubeconfig, a
connection refused, no answer within the timeout, a rejected credential). A
Secret that Loom would not use (no kubeconfig, an invalid name, a name two
Secrets register) is listed with the reason, and not asked.

A kubeconfig that runs an exec credential plugin or an auth-provider is
shown as refused, as a Loom without --allow-kubeconfig-exec refuses it; with
--allow-kubeconfig-exec, list runs the plugin on this machine to ask.

The probe is sent from this machine, not from Loom's pod: a cluster can
answer here and not there (a network between them, a name only this machine
resolves), and the other way round.`,
		Example: `  loom cluster list
  loom cluster list --timeout 2s -o json | jq -r '.clusters[] | select(.reachable | not) | .name'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runClusterList(cmd.Context(), cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.DurationVar(&o.timeout, "timeout", 5*time.Second, "give up on a cluster that has not answered after this long (clusters are asked at once)")
	f.BoolVar(&o.allowExec, cluster.FlagAllowExec, false, "run the exec credential plugins and auth-providers of registrations to ask their clusters")
	addOutputFlag(cmd, &o.output, "a table")
	return cmd
}

// clusterList is loom cluster list's -o json|yaml document.
type clusterList struct {
	Clusters []clusteradmin.Row `json:"clusters"`
}

func runClusterList(ctx context.Context, out io.Writer, o *clusterListOptions) error {
	secrets, err := o.secrets()
	if err != nil {
		return err
	}
	listCtx, cancel := context.WithTimeout(ctx, clusterRequestTimeout)
	found, err := clusteradmin.Secrets(listCtx, secrets, o.namespace)
	cancel()
	if err != nil {
		return err
	}
	p := clusteradmin.Prober{Timeout: o.timeout, Options: cluster.Options{AllowExec: o.allowExec}}
	rows := clusteradmin.ProbeAll(ctx, clusteradmin.List(found, o.namespace), p.Probe)
	if o.output != "" {
		return printDocument(out, o.output, clusterList{Clusters: rows})
	}
	return printClusterTable(out, rows, o.namespace)
}

// printClusterTable prints rows as loom cluster list's table.
func printClusterTable(out io.Writer, rows []clusteradmin.Row, ns string) error {
	if len(rows) == 0 {
		_, err := fmt.Fprintf(out, "No cluster is registered in namespace %s.\n", ns)
		return err
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSOURCE\tSECRET\tREACHABLE\tVERSION\tLABELS\tERROR")
	for _, r := range rows {
		reachable := "no"
		if r.Reachable {
			reachable = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", orNone(r.Name), r.Source, r.Secret, reachable, orNone(r.Version), tableLabels(r.Labels), r.Error)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// A row without an error would end in the LABELS column's padding.
	for line := range strings.Lines(b.String()) {
		if _, err := io.WriteString(out, strings.TrimRight(line, " \n")+"\n"); err != nil {
			return err
		}
	}
	return nil
}

// tableLabels shows a registration's labels but the ones that name it.
func tableLabels(labels map[string]string) string {
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if k != cluster.LabelCluster && k != cluster.LabelClusterAPIName {
			kv = append(kv, k+"="+labels[k])
		}
	}
	return orNone(strings.Join(kv, ","))
}

func newClusterRemoveCommand(o *clusterOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "remove NAME",
		Short: "Unregister a workload cluster: delete its Loom registration Secret",
		Long: `Remove deletes the Secrets in Loom's namespace (-n) of the management
cluster (--kubeconfig) labelled loom.dev/cluster=NAME: NAME's Loom
registration. It refuses a cluster that Cluster API registered (its
<cluster>-kubeconfig Secret, which Cluster API owns and would write again),
and a Secret of Cluster API's type that also carries the label (remove the
label instead).

Loom then cannot reach the cluster: delete the parents' children there
first (edit or delete the parents), or a parent deleted later waits,
saying which cluster's credentials are missing.`,
		Example: `  loom cluster remove eu-1
  loom cluster remove w1 -n loom --kubeconfig .cluster/kubeconfig`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			secrets, err := o.secrets()
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), clusterRequestTimeout)
			defer cancel()
			deleted, err := clusteradmin.Remove(ctx, secrets, args[0], o.namespace)
			for _, name := range deleted {
				fmt.Fprintf(cmd.OutOrStdout(), "cluster %s removed (Secret %s/%s deleted)\n", args[0], o.namespace, name)
			}
			return err
		},
	}
}
