package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	applycorev1 "k8s.io/client-go/applyconfigurations/core/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/loom-operator/loom/engine/cluster"
	"github.com/loom-operator/loom/engine/offline"
	"github.com/loom-operator/loom/internal/kubeclient"
)

// clusterFieldManager is the field manager of the registration Secrets
// loom cluster add applies.
const clusterFieldManager = "loom-cluster"

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

// registrationSecret is the Secret loom cluster add writes, checked as
// Loom checks a registration's kubeconfig.
func (o *clusterAddOptions) registrationSecret(name string) (*corev1.Secret, error) {
	labels, err := parseLabels(o.labels)
	if err != nil {
		return nil, err
	}
	kc, err := registrationKubeconfig(o.fromPath, o.fromContext)
	if err != nil {
		return nil, err
	}
	s, err := cluster.NewSecret(name, o.namespace, labels, kc)
	if err != nil {
		return nil, err
	}
	reg, _, err := cluster.FromSecret(s, o.namespace)
	if err != nil {
		return nil, err
	}
	if _, err := cluster.RESTConfig(reg, cluster.Options{AllowExec: o.allowExec}); err != nil {
		return nil, err
	}
	return s, nil
}

func runClusterAdd(ctx context.Context, out io.Writer, o *clusterAddOptions, name string) error {
	s, err := o.registrationSecret(name)
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
	before, err := checkAddTarget(ctx, secrets, name, o.namespace)
	if err != nil {
		return err
	}
	ac := applycorev1.Secret(s.Name, s.Namespace).WithLabels(s.Labels).WithType(s.Type).WithData(s.Data)
	after, err := secrets.Apply(ctx, ac, metav1.ApplyOptions{FieldManager: clusterFieldManager, Force: true})
	if err != nil {
		return fmt.Errorf("apply Secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	verb := "registered"
	switch {
	case before != "" && before == after.ResourceVersion:
		verb = "unchanged"
	case before != "":
		verb = "updated"
	}
	_, err = fmt.Fprintf(out, "cluster %s %s (Secret %s/%s)\n", name, verb, s.Namespace, s.Name)
	return err
}

// checkAddTarget refuses what loom cluster add must not write: a Secret
// NAME that is not NAME's Loom registration (a Secret of something else, a
// registration of another cluster, Cluster API's), and a second
// registration of NAME. It returns the resourceVersion of the Secret NAME
// if it is there ("" if not), to tell an update from no change.
func checkAddTarget(ctx context.Context, secrets corev1client.SecretInterface, name, ns string) (string, error) {
	list, err := secrets.List(ctx, metav1.ListOptions{LabelSelector: cluster.LabelCluster + "=" + name})
	if err != nil {
		return "", fmt.Errorf("list the registrations of cluster %s in namespace %s: %w", name, ns, err)
	}
	for _, s := range list.Items {
		if s.Name != name {
			return "", fmt.Errorf("cluster %s is already registered by Secret %s/%s: a second registration would make the name ambiguous (Loom would use neither); remove it first (loom cluster remove %s) or update it with kubectl",
				name, ns, s.Name, name)
		}
	}
	capi, err := secrets.Get(ctx, name+"-kubeconfig", metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return "", fmt.Errorf("get Secret %s/%s-kubeconfig: %w", ns, name, err)
	default:
		if reg, ok, _ := cluster.FromSecret(capi, ns); ok && reg.Name == name {
			return "", fmt.Errorf("cluster %s is already registered by Cluster API's Secret %s/%s: a second registration would make the name ambiguous (Loom would use neither); Cluster API's needs no loom cluster add",
				name, ns, capi.Name)
		}
	}
	s, err := secrets.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("get Secret %s/%s: %w", ns, name, err)
	case s.Labels[cluster.LabelCluster] != name:
		return "", fmt.Errorf("the Secret %s/%s exists and is not the registration of cluster %s (its label %s is %q): Loom does not take over a Secret by its name; register the cluster under another name, or delete that Secret",
			ns, name, name, cluster.LabelCluster, s.Labels[cluster.LabelCluster])
	case s.Type == cluster.SecretTypeClusterAPI:
		return "", fmt.Errorf("the Secret %s/%s is Cluster API's (type %s), which Cluster API owns: loom cluster add does not write it", ns, name, s.Type)
	}
	return s.ResourceVersion, nil
}

// printRedactedSecret prints s as YAML with its kubeconfig's credentials
// redacted, in stringData so that it reads as text.
func printRedactedSecret(out io.Writer, s *corev1.Secret) error {
	kc, err := redactedKubeconfig(s.Data[cluster.KeyKubeconfig])
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
			return runClusterRemove(cmd.Context(), cmd.OutOrStdout(), o, args[0])
		},
	}
}

func runClusterRemove(ctx context.Context, out io.Writer, o *clusterOptions, name string) error {
	secrets, err := o.secrets()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, clusterRequestTimeout)
	defer cancel()
	list, err := secrets.List(ctx, metav1.ListOptions{LabelSelector: cluster.LabelCluster + "=" + name})
	if err != nil {
		return fmt.Errorf("list the registrations of cluster %s in namespace %s: %w", name, o.namespace, err)
	}
	if len(list.Items) == 0 {
		return noLoomRegistration(ctx, secrets, name, o.namespace)
	}
	for _, s := range list.Items {
		if s.Type == cluster.SecretTypeClusterAPI {
			return fmt.Errorf("the Secret %s/%s, which registers cluster %s, is Cluster API's (type %s): remove its label %s instead of the Secret",
				s.Namespace, s.Name, name, s.Type, cluster.LabelCluster)
		}
	}
	for _, s := range list.Items {
		uid := s.UID
		err := secrets.Delete(ctx, s.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete Secret %s/%s: %w", s.Namespace, s.Name, err)
		}
		if _, err := fmt.Fprintf(out, "cluster %s removed (Secret %s/%s deleted)\n", name, s.Namespace, s.Name); err != nil {
			return err
		}
	}
	return nil
}

// noLoomRegistration is loom cluster remove's error when no Secret is
// labelled with the cluster: Cluster API's registration, or none.
func noLoomRegistration(ctx context.Context, secrets corev1client.SecretInterface, name, ns string) error {
	capi, err := secrets.Get(ctx, name+"-kubeconfig", metav1.GetOptions{})
	if err == nil {
		if reg, ok, _ := cluster.FromSecret(capi, ns); ok && reg.Name == name {
			return fmt.Errorf("cluster %s is registered by Cluster API's Secret %s, which Cluster API owns: delete the Cluster, not its Secret",
				name, types.NamespacedName{Namespace: ns, Name: capi.Name})
		}
	} else if !apierrors.IsNotFound(err) {
		return fmt.Errorf("get Secret %s/%s-kubeconfig: %w", ns, name, err)
	}
	return fmt.Errorf("no registration of cluster %s in namespace %s (no Secret labelled %s=%s)", name, ns, cluster.LabelCluster, name)
}
