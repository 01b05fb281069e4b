package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/loom-operator/loom/engine/cluster"
)

// clusterRow is one registration as loom cluster list reports it.
type clusterRow struct {
	// Name is the cluster's name (as the Secret says it, even if it is not
	// a valid one).
	Name string `json:"name"`
	// Source is how it is registered: loom or cluster-api.
	Source cluster.Source `json:"source"`
	// Secret is the registration's Secret, namespace/name.
	Secret string `json:"secret"`
	// Labels are the Secret's labels.
	Labels map[string]string `json:"labels,omitempty"`
	// Reachable is whether the cluster's API server answered /version
	// with the registration's credentials within the deadline.
	Reachable bool `json:"reachable"`
	// Version is the API server's gitVersion, when it answered.
	Version string `json:"version,omitempty"`
	// Error says why the cluster is not reachable, or why the Secret is
	// not a registration Loom uses (then it is not probed).
	Error string `json:"error,omitempty"`
}

// clusterList is loom cluster list's -o json|yaml document.
type clusterList struct {
	Clusters []clusterRow `json:"clusters"`
}

// listedCluster is a row and, if Loom would use it, the registration to
// probe.
type listedCluster struct {
	row clusterRow
	reg cluster.Registration
	// used says that Loom uses reg, and so that it is probed.
	used bool
}

// versionProber asks a registered cluster's API server for its version.
type versionProber func(ctx context.Context, reg cluster.Registration) (string, error)

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
connection refused, a deadline, a rejected credential). A Secret that Loom
would not use (no kubeconfig, an invalid name, a name two Secrets register)
is listed with the reason, and not asked.

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

func runClusterList(ctx context.Context, out io.Writer, o *clusterListOptions) error {
	secrets, err := o.secrets()
	if err != nil {
		return err
	}
	found, err := registrationSecrets(ctx, secrets, o.namespace)
	if err != nil {
		return err
	}
	items := listRegistrations(found, o.namespace)
	rows := probeAll(ctx, items, o.probe)
	if o.output != "" {
		return printDocument(out, o.output, clusterList{Clusters: rows})
	}
	return printClusterTable(out, rows, o.namespace)
}

// registrationSecrets lists the Secrets of Loom's namespace that may
// register a cluster: those labelled cluster.LabelCluster and those of
// Cluster API's type, each once.
func registrationSecrets(ctx context.Context, secrets corev1client.SecretInterface, ns string) ([]corev1.Secret, error) {
	ctx, cancel := context.WithTimeout(ctx, clusterRequestTimeout)
	defer cancel()
	labelled, err := secrets.List(ctx, metav1.ListOptions{LabelSelector: cluster.LabelCluster})
	if err != nil {
		return nil, fmt.Errorf("list the Secrets labelled %s in namespace %s: %w", cluster.LabelCluster, ns, err)
	}
	capi, err := secrets.List(ctx, metav1.ListOptions{FieldSelector: "type=" + string(cluster.SecretTypeClusterAPI)})
	if err != nil {
		return nil, fmt.Errorf("list the Secrets of type %s in namespace %s: %w", cluster.SecretTypeClusterAPI, ns, err)
	}
	out := labelled.Items
	for _, s := range capi.Items {
		if _, dup := s.Labels[cluster.LabelCluster]; !dup {
			out = append(out, s)
		}
	}
	return out, nil
}

// listRegistrations reads each Secret as Loom's controller reads it
// (cluster.FromSecret, then cluster.Index): a Secret that registers no
// cluster is left out, one that Loom would not use is a row with the
// reason and nothing to probe. Rows are sorted by name, then Secret.
func listRegistrations(secrets []corev1.Secret, ns string) []listedCluster {
	var items []listedCluster
	var regs []cluster.Registration
	for i := range secrets {
		s := &secrets[i]
		reg, ok, err := cluster.FromSecret(s, ns)
		row := clusterRow{Secret: s.Namespace + "/" + s.Name, Labels: s.Labels}
		switch {
		case err != nil:
			row.Name, row.Source = s.Labels[cluster.LabelCluster], cluster.SourceLoom
			if _, labelled := s.Labels[cluster.LabelCluster]; !labelled {
				row.Name, row.Source = s.Labels[cluster.LabelClusterAPIName], cluster.SourceClusterAPI
			}
			row.Error = err.Error()
			items = append(items, listedCluster{row: row})
		case ok:
			row.Name, row.Source = reg.Name, reg.Source
			regs = append(regs, reg)
			items = append(items, listedCluster{row: row, reg: reg, used: true})
		}
	}
	// Index leaves out a name two Secrets register, and says so once.
	index, errs := cluster.Index(regs)
	for i := range items {
		if it := &items[i]; it.used {
			if _, used := index[it.row.Name]; !used {
				it.used = false
				it.row.Error = ambiguity(errs, it.row.Name)
			}
		}
	}
	slices.SortStableFunc(items, func(a, b listedCluster) int {
		return strings.Compare(a.row.Name+"\x00"+a.row.Secret, b.row.Name+"\x00"+b.row.Secret)
	})
	return items
}

// ambiguity is Index's error about name.
func ambiguity(errs []error, name string) string {
	for _, err := range errs {
		if strings.Contains(err.Error(), "cluster "+name+" is registered by more than one Secret") {
			return err.Error() + "; Loom uses neither"
		}
	}
	return "not used by Loom"
}

// probeAll asks every registration that has one for its version, all at
// once, and returns the rows in items' order. probe bounds its own time.
func probeAll(ctx context.Context, items []listedCluster, probe versionProber) []clusterRow {
	rows := make([]clusterRow, len(items))
	var wg sync.WaitGroup
	for i, it := range items {
		rows[i] = it.row
		if !it.used {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := probe(ctx, it.reg)
			if err != nil {
				rows[i].Error = err.Error()
				return
			}
			rows[i].Reachable, rows[i].Version = true, v
		}()
	}
	wg.Wait()
	return rows
}

// probe asks reg's API server for its version (GET /version), with the
// client Loom would build from the registration, within o.timeout.
func (o *clusterListOptions) probe(ctx context.Context, reg cluster.Registration) (string, error) {
	cfg, err := cluster.RESTConfig(reg, cluster.Options{AllowExec: o.allowExec})
	if err != nil {
		return "", err
	}
	cfg.Timeout = o.timeout
	cfg.UserAgent = "loom"
	d, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return "", fmt.Errorf("cluster %s: %w", reg.Name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	body, err := d.RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) && netErr.Timeout():
		return "", fmt.Errorf("no answer within %s: %w", o.timeout, err)
	case err != nil:
		return "", err
	}
	var info version.Info
	if err := json.Unmarshal(body, &info); err != nil {
		return "", fmt.Errorf("read /version of %s: %w", cfg.Host, err)
	}
	return info.GitVersion, nil
}

// printClusterTable prints rows as loom cluster list's table.
func printClusterTable(out io.Writer, rows []clusterRow, ns string) error {
	if len(rows) == 0 {
		_, err := fmt.Fprintf(out, "No cluster is registered in namespace %s.\n", ns)
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSOURCE\tSECRET\tREACHABLE\tVERSION\tLABELS\tERROR")
	for _, r := range rows {
		reachable, v, msg := "no", r.Version, r.Error
		if r.Reachable {
			reachable = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", orNone(r.Name), r.Source, r.Secret, reachable, orNone(v), tableLabels(r.Labels), msg)
	}
	return tw.Flush()
}

// tableLabels shows a registration's labels but the ones that name it.
func tableLabels(labels map[string]string) string {
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if k != cluster.LabelCluster && k != cluster.LabelClusterAPIName {
			kv = append(kv, k+"="+labels[k])
		}
	}
	if len(kv) == 0 {
		return orNone("")
	}
	return strings.Join(kv, ",")
}
