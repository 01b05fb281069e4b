package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/offline"
	"github.com/loom-operator/loom/engine/rbac"
	"github.com/loom-operator/loom/engine/render"
)

// rbacOptions are `loom rbac`'s flags.
type rbacOptions struct {
	templates      []string
	namespace      string
	installCRDs    bool
	leaderElect    bool
	leaseNS        string
	sharded        bool
	shardNS        string
	loomNS         string
	webhookSecret  string
	webhookBind    string
	webhookCertDir string
	name           string
	serviceAccount string
	output         string // -o: "" (a YAML stream), json or yaml (a v1 List)
	rules          bool
}

func newRBACCommand() *cobra.Command {
	o := rbacOptions{}
	cmd := &cobra.Command{
		Use:   "rbac -t SET...",
		Short: "Print the least-privilege RBAC that loom run needs for the given template sets",
		Long: `Rbac prints the ClusterRole (and, for a Loom that watches one namespace,
the Roles) that ` + "`loom run`" + ` needs for the given template sets, bound to
Loom's ServiceAccount, and nothing more:

  - each parent kind: get, list, watch; patch of its status (server-side
    apply); update of its finalizers (for blockOwnerDeletion); patch of
    the parent itself only for a set whose children use
    loom.dev/delete-policy or clusterScoped (Loom's finalizers);
  - each kind the templates render (read from every document's top-level
    apiVersion and kind): get, list, watch, create, patch, delete;
  - each kind loom.yaml's lookups declare: get, list, watch, in the
    watched namespace and the lookup's namespaces when Loom watches one
    namespace;
  - Namespaces (get) for loom.dev/delete-policy: orphan; Secrets (get,
    create, patch, delete) for a chart that calls a random or generating
    function (its seed Secret);
  - Events (create, patch); CRDs (get, list, watch, and with
    --install-crds create and patch); TemplateSets and TemplateRevisions
    only for sets with a rollout; the leader-election Lease with
    --leader-elect.

Give the same flags as to loom run. A template whose kind (or, for a kind
that is not built in, its apiVersion) comes out of a template action is
refused, naming its file and line. Resources are named offline: a CRD
kind whose plural is not the default needs loom.yaml's lookups or a rule
of your own. Loom checks its permissions against these rules when it
starts and names any it lacks in /readyz and in its log.

Exit codes: 0 printed; 1 a bad flag, a set that fails to load, or a
computed kind.`,
		Example: `  loom rbac -t templates/
  loom rbac -t templates/myresource -t sets/shop --leader-elect | kubectl apply -f -
  loom rbac -t templates/ --namespace shop -o json
  loom rbac -t templates/ --rules > deploy/chart/files/rbac/rules.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			parts := strings.Split(o.serviceAccount, "/")
			if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
				return (fmt.Errorf("--service-account %q: want NAMESPACE/NAME", o.serviceAccount))
			}
			policy, err := o.policy()
			if err != nil {
				return err
			}
			return printPolicy(cmd.OutOrStdout(), policy, o, types.NamespacedName{Namespace: parts[0], Name: parts[1]})
		},
	}
	f := cmd.Flags()
	f.StringArrayVarP(&o.templates, "templates", "t", nil, "a template set's folder, or a folder of sets (repeatable)")
	f.StringVarP(&o.namespace, "namespace", "n", "", "loom run's --namespace: Roles for that namespace instead of a ClusterRole")
	f.BoolVar(&o.installCRDs, "install-crds", false, "loom run's --install-crds")
	f.BoolVar(&o.leaderElect, "leader-elect", false, "loom run's --leader-elect: add the Lease")
	f.StringVar(&o.leaseNS, "leader-election-namespace", "loom-system", "loom run's --leader-election-namespace")
	f.BoolVar(&o.sharded, "sharded", false, "loom run's --sharded: add the shard group's Leases")
	f.StringVar(&o.shardNS, "shard-namespace", "loom-system", "loom run's --shard-namespace")
	f.StringVar(&o.loomNS, "loom-namespace", offline.DefaultLoomNamespace, "loom run's --loom-namespace: where a set with loom.yaml's clusters reads the Secrets that register them")
	f.StringVar(&o.webhookSecret, "webhook-cert-secret", "loom-webhook-tls", "loom run's --webhook-cert-secret: the Secret, in --loom-namespace, of the conversion webhook's certificates, for a set of several versions")
	f.StringVar(&o.webhookBind, "webhook-bind-address", ":9443", `loom run's --webhook-bind-address: "0" (no conversion webhook) needs no webhook Secret`)
	f.StringVar(&o.webhookCertDir, "webhook-cert-dir", "", "loom run's --webhook-cert-dir: cert-manager's certificate, so Loom neither creates nor rotates a webhook Secret")
	f.StringVar(&o.name, "name", "loom", "name of the ClusterRole, Roles and bindings")
	f.StringVar(&o.serviceAccount, "service-account", "loom-system/loom", "Loom's ServiceAccount, NAMESPACE/NAME")
	f.BoolVar(&o.rules, "rules", false, "print the ClusterRole's rules alone, as a YAML list (the chart's files/rbac/rules.yaml)")
	addOutputFlag(cmd, &o.output, "the objects as a YAML stream")
	_ = cmd.MarkFlagRequired("templates")
	return cmd
}

// policy loads the sets and generates their rules.
func (o rbacOptions) policy() (rbac.Policy, error) {
	var sets []rbac.Set
	for _, dir := range o.templates {
		loaded, err := loadSets(dir)
		if err != nil {
			return rbac.Policy{}, err
		}
		for _, s := range loaded {
			rs, err := rbac.FromSet(s)
			if err != nil {
				return rbac.Policy{}, err
			}
			sets = append(sets, rs)
		}
	}
	opts := rbac.Options{Namespace: o.namespace, InstallCRDs: o.installCRDs, LoomNamespace: o.loomNS, WebhookCertSecret: o.webhookSecret,
		NoWebhook: o.webhookBind == "0", WebhookFiles: o.webhookCertDir != ""}
	if o.leaderElect {
		opts.LeaseNamespace = o.leaseNS
	}
	if o.sharded {
		opts.ShardNamespace = o.shardNS
	}
	return rbac.Generate(sets, opts), nil
}

// loadSets loads dir as one set when it has a loom.yaml, else every set
// in it.
func loadSets(dir string) ([]*render.Set, error) {
	if _, err := os.Stat(filepath.Join(dir, config.File)); err == nil {
		s, err := render.Load(dir)
		if err != nil {
			return nil, fmt.Errorf("load template set %s: %w", dir, err)
		}
		return []*render.Set{s}, nil
	}
	sets, err := render.LoadAll(dir)
	if err != nil {
		return nil, err
	}
	if len(sets) == 0 {
		return nil, fmt.Errorf("%s: no template set (no %s in it or its folders)", dir, config.File)
	}
	return sets, nil
}

// printPolicy writes the policy's objects, or its cluster-wide rules.
func printPolicy(w io.Writer, p rbac.Policy, o rbacOptions, sa types.NamespacedName) error {
	if o.rules {
		// The rules in Loom's own namespace (the conversion webhook's
		// Secret) are the chart's own Role, as its Lease's are; those in
		// a parent's namespace (--namespace) are not in a ClusterRole.
		for ns := range p.Namespaces {
			if ns != o.loomNS {
				return errors.New("--rules prints a ClusterRole's rules; with --namespace there are Roles too: leave it out")
			}
		}
		out, err := yaml.Marshal(p.Cluster)
		if err != nil {
			return err
		}
		left := ""
		if len(p.Namespaces[o.loomNS]) > 0 {
			left = fmt.Sprintf("# Left out: the rules in %s (the conversion webhook's Secret), the chart's own Role.\n", o.loomNS)
		}
		_, err = fmt.Fprintf(w, "# Generated by `loom rbac`; regenerate it, do not edit it.\n%s%s", left, out)
		return err
	}
	objs := p.Objects(o.name, sa)
	if o.output != "" {
		list := make([]*unstructured.Unstructured, 0, len(objs))
		for _, obj := range objs {
			u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
			if err != nil {
				return err
			}
			list = append(list, &unstructured.Unstructured{Object: u})
		}
		return printObjects(w, o.output, list)
	}
	for i, obj := range objs {
		out, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		sep := "---\n"
		if i == 0 {
			sep = "# Generated by `loom rbac`: what loom run needs for these template sets, and nothing more.\n"
		}
		if _, err := fmt.Fprintf(w, "%s%s", sep, out); err != nil {
			return err
		}
	}
	return nil
}
